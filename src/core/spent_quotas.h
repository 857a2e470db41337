// Quotas known to be spent until their window ends: a gateway that was told "no, this tenant's
// monthly quota is used up" answers that tenant's next requests itself, without a statement to
// the database each, as the over-limit cache does for rate limits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "sluice/clock.h"
#include "sluice/mutex.h"
#include "sluice/quota_store.h"

namespace sluice {

// Thread-safe and bounded: past `max_keys` live entries, new ones are not remembered (the store is
// asked instead), so that a flood of distinct spent quotas cannot grow it without bound. A
// window's count only grows, so a count seen is a floor for the rest of the window; what lowers
// it (`sluice quota set` and `reset`) must Forget the quota.
class SpentQuotas {
 public:
  SpentQuotas(std::shared_ptr<const Clock> clock, size_t max_keys);

  // Remembers, when `reply` says `op` did not fit, the count it saw, until the reply's window
  // ends. `asked_ms` is the clock's time when the op was sent: the window's end is counted from
  // then, so that it is never kept past the store's end of the window. `changes` is what
  // Changes() said when the op was sent: when a Forget or Clear came since, the reply may have
  // been decided before the reset that called it (their notices and replies come by different
  // connections) and is not remembered.
  void Remember(const QuotaOp& op, const QuotaReply& reply, int64_t asked_ms, uint64_t changes)
      SLUICE_EXCLUDES(mutex_);

  // How many times Forget or Clear has been called.
  uint64_t Changes() const SLUICE_EXCLUDES(mutex_);

  // The reply an enforced `op` with a positive cost would get from the store, when the count
  // remembered for its quota and window leaves no room for its cost; none otherwise.
  std::optional<QuotaReply> Rejection(const QuotaOp& op) const SLUICE_EXCLUDES(mutex_);

  // Forgets the quota of `bucket` and `value`, in whatever window.
  void Forget(std::string_view bucket, std::string_view value) SLUICE_EXCLUDES(mutex_);

  // Forgets everything: when what would Forget a quota may have been missed.
  void Clear() SLUICE_EXCLUDES(mutex_);

  size_t size() const SLUICE_EXCLUDES(mutex_);

 private:
  struct Entry {
    QuotaWindow window;
    QuotaReply reply;  // as the store gave it
    int64_t asked_ms;  // the clock when it was asked
    int64_t until_ms;  // the clock when the window ends, at the latest
  };

  static std::string Key(std::string_view bucket, std::string_view value);

  using Entries = std::unordered_map<std::string, Entry>;  // "<bucket>:<value>"

  // Drops the entries whose window has ended.
  void DropEnded(int64_t now) const SLUICE_REQUIRES(mutex_);
  // Drops the entry `it` and its place in the order of ends.
  void Erase(Entries::iterator it) const SLUICE_REQUIRES(mutex_);

  const std::shared_ptr<const Clock> clock_;
  const size_t max_keys_;
  mutable Mutex mutex_;
  uint64_t changes_ SLUICE_GUARDED_BY(mutex_) = 0;
  mutable Entries entries_ SLUICE_GUARDED_BY(mutex_);
  // The entries in the order their windows end, by their keys (a node's key stays where it is):
  // the ended ones are at the front, so that making room costs O(log n) an entry, never a scan
  // of them all under the lock every request takes (clients choose the keys).
  mutable std::set<std::pair<int64_t, const std::string*>> ends_ SLUICE_GUARDED_BY(mutex_);
};

}  // namespace sluice
