// Heavy hitters of a stream of values in bounded memory: who is being rate limited most. A
// Space-Saving summary (Metwally, Agrawal and El Abbadi, 2005) counts a fixed number of values
// however many distinct ones the stream holds; a ring of them, one per time slot, forgets what
// is older than a window, so that yesterday's offender does not hide today's. Pure logic, time
// passed in; not thread-safe (RejectedValues puts a lock around one).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::http {

// A value's estimated count: the true count lies in [count - error, count].
struct HeavyHitter {
  std::string value;
  uint64_t count = 0;
  uint64_t error = 0;

  friend bool operator==(const HeavyHitter&, const HeavyHitter&) = default;
};

// Space-Saving with `capacity` counters. Every value counted more than total / capacity times
// has a counter; a new value, when all are taken, takes over the smallest one and inherits its
// count as its error. O(log capacity) a value.
class SpaceSaving {
 public:
  explicit SpaceSaving(size_t capacity);

  void Add(std::string_view value, uint64_t weight = 1);

  // The counters, largest count first (ties by value, so that the order is stable).
  std::vector<HeavyHitter> Top() const;

  // What a value without a counter may have been counted at most: the smallest counter when
  // every counter is taken, else 0.
  uint64_t Floor() const;

  uint64_t total() const { return total_; }
  size_t size() const { return heap_.size(); }
  size_t capacity() const { return capacity_; }
  void Clear();

 private:
  void SiftDown(size_t i);
  void SiftUp(size_t i);
  void Swap(size_t a, size_t b);

  size_t capacity_;
  uint64_t total_ = 0;
  std::vector<HeavyHitter> heap_;                  // a min-heap by count
  std::unordered_map<std::string, size_t> where_;  // value -> its place in heap_
};

// The heavy hitters of the last `slots` time slots of `slot_ms` each (the current one, still
// filling, included): one SpaceSaving per slot, merged when read.
class WindowedHeavyHitters {
 public:
  // `capacity` counters per slot.
  WindowedHeavyHitters(size_t capacity, size_t slots, int64_t slot_ms);

  // Counts `value` at `now_ms` (any monotonic clock, never going back).
  void Add(std::string_view value, int64_t now_ms, uint64_t weight = 1);

  // The `n` values with the largest counts over the window that ends at `now_ms`, largest first.
  // A value's count adds its counts in the slots that kept it and, where a full slot did not,
  // that slot's Floor(), which its error includes too: the true count stays within the bounds.
  std::vector<HeavyHitter> Top(size_t n, int64_t now_ms) const;

  // Values counted over the window that ends at `now_ms`.
  uint64_t Total(int64_t now_ms) const;

  size_t capacity() const { return capacity_; }

 private:
  struct Slot {
    int64_t number = -1;  // now_ms / slot_ms of what it holds; -1: nothing yet
    SpaceSaving summary;
  };
  bool Live(const Slot& slot, int64_t now_ms) const;

  size_t capacity_;
  int64_t slot_ms_;
  std::vector<Slot> slots_;
};

}  // namespace sluice::http
