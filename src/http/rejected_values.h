// Who is being rate limited: for each gateway rule and each rate limit service limit, the values
// rejected most over the last minute or so (WindowedHeavyHitters), for the admin listener's
// /debug/top and status page. Recording takes one small lock per rule, and only on rejections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/heavy_hitters.h"
#include "sluice/mutex.h"
#include "sluice/thread_annotations.h"

namespace sluice::http {

// The rejected values of one rule or limit, over a sliding window. Thread-safe.
class RejectedValues {
 public:
  // The window: kSlots slots of kSlotMs, so between 45 and 60 s back.
  static constexpr size_t kSlots = 4;
  static constexpr int64_t kSlotMs = 15'000;
  // Counters kept per value shown: more counters, tighter counts for the values shown.
  static constexpr size_t kCountersPerShown = 4;

  // Shows the `size` values rejected most; 0 records nothing.
  explicit RejectedValues(size_t size);

  // Counts one rejection of `value` at `now_ms` (a steady clock's milliseconds).
  void Record(std::string_view value, int64_t now_ms) SLUICE_EXCLUDES(mutex_);

  // The values rejected most over the window that ends at `now_ms`, most first.
  std::vector<HeavyHitter> Top(int64_t now_ms) const SLUICE_EXCLUDES(mutex_);

  // Rejections over the window, of every value.
  uint64_t Total(int64_t now_ms) const SLUICE_EXCLUDES(mutex_);

  // Starts again, showing `size` values.
  void Resize(size_t size) SLUICE_EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;
  size_t size_ SLUICE_GUARDED_BY(mutex_) = 0;
  // Null when size_ is 0.
  std::unique_ptr<WindowedHeavyHitters> window_ SLUICE_GUARDED_BY(mutex_);
};

// Every rule's and limit's RejectedValues, each made on first use and kept (with its address)
// for as long as this object. Thread-safe.
class TopRejected {
 public:
  // Limit names come partly from calls (a descriptor's own limit is named by its keys): past this
  // many, new ones are not recorded.
  static constexpr size_t kMaxLimits = 1024;

  explicit TopRejected(size_t size = 20);

  // Every summary starts again with `size` values shown, when that changes.
  void Resize(size_t size) SLUICE_EXCLUDES(mutex_);
  size_t size() const SLUICE_EXCLUDES(mutex_);

  // The summary of the gateway rule `name`.
  RejectedValues* ForRule(const std::string& name) SLUICE_EXCLUDES(mutex_);
  // The summary of the rate limit service's limit `name` ("DOMAIN/LIMIT"); null past kMaxLimits.
  RejectedValues* ForLimit(std::string_view name) SLUICE_EXCLUDES(mutex_);

  // The limits recorded so far, by name.
  std::vector<std::pair<std::string, const RejectedValues*>> Limits() const SLUICE_EXCLUDES(mutex_);

 private:
  mutable Mutex mutex_;  // the summaries have locks of their own
  size_t size_ SLUICE_GUARDED_BY(mutex_);
  std::map<std::string, std::unique_ptr<RejectedValues>, std::less<>> rules_
      SLUICE_GUARDED_BY(mutex_);
  std::map<std::string, std::unique_ptr<RejectedValues>, std::less<>> limits_
      SLUICE_GUARDED_BY(mutex_);
};

// A descriptor's entries as one recorded value (keys and values kept apart, so that the values
// alone are masked when shown).
std::string DescriptorValue(const std::vector<std::pair<std::string, std::string>>& entries);

// How a recorded value is shown.
enum class ValueKind {
  kPlain,       // an address or a tenant: whole
  kSecret,      // an API key or a header's value: masked unless revealed
  kDescriptor,  // DescriptorValue's: "key=value, ..." with each value masked unless revealed
};

// A value that may be a secret, recognisable without being revealed: its first characters (6
// at most, and at most half of them, so that a short value is never shown whole), "…", and six
// hex digits of a hash of the whole value (the same in every process and on every refresh).
std::string MaskedValue(std::string_view value);

// `value` as the admin listener shows it.
std::string ShownValue(std::string_view value, ValueKind kind, bool reveal);

}  // namespace sluice::http
