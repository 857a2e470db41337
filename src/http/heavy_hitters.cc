#include "http/heavy_hitters.h"

#include <algorithm>
#include <utility>

namespace sluice::http {

SpaceSaving::SpaceSaving(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  heap_.reserve(capacity_);
  where_.reserve(capacity_);
}

void SpaceSaving::Clear() {
  heap_.clear();
  where_.clear();
  total_ = 0;
}

void SpaceSaving::Swap(size_t a, size_t b) {
  std::swap(heap_[a], heap_[b]);
  where_[heap_[a].value] = a;
  where_[heap_[b].value] = b;
}

void SpaceSaving::SiftUp(size_t i) {
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (heap_[parent].count <= heap_[i].count) return;
    Swap(parent, i);
    i = parent;
  }
}

void SpaceSaving::SiftDown(size_t i) {
  for (;;) {
    size_t smallest = i;
    for (size_t child : {2 * i + 1, 2 * i + 2}) {
      if (child < heap_.size() && heap_[child].count < heap_[smallest].count) smallest = child;
    }
    if (smallest == i) return;
    Swap(i, smallest);
    i = smallest;
  }
}

void SpaceSaving::Add(std::string_view value, uint64_t weight) {
  total_ += weight;
  std::string key(value);
  if (auto it = where_.find(key); it != where_.end()) {
    const size_t i = it->second;
    heap_[i].count += weight;
    SiftDown(i);
    return;
  }
  if (heap_.size() < capacity_) {
    where_.emplace(key, heap_.size());
    heap_.push_back({std::move(key), weight, 0});
    SiftUp(heap_.size() - 1);
    return;
  }
  // Every counter is taken: the value takes over the smallest, whose count becomes its error.
  HeavyHitter& smallest = heap_.front();
  where_.erase(smallest.value);
  smallest.error = smallest.count;
  smallest.count += weight;
  smallest.value = std::move(key);
  where_.emplace(smallest.value, 0);
  SiftDown(0);
}

uint64_t SpaceSaving::Floor() const {
  return heap_.size() < capacity_ || heap_.empty() ? 0 : heap_.front().count;
}

namespace {

void SortByCount(std::vector<HeavyHitter>& hitters) {
  std::sort(hitters.begin(), hitters.end(), [](const HeavyHitter& a, const HeavyHitter& b) {
    return a.count != b.count ? a.count > b.count : a.value < b.value;
  });
}

}  // namespace

std::vector<HeavyHitter> SpaceSaving::Top() const {
  std::vector<HeavyHitter> top = heap_;
  SortByCount(top);
  return top;
}

WindowedHeavyHitters::WindowedHeavyHitters(size_t capacity, size_t slots, int64_t slot_ms)
    : capacity_(capacity), slot_ms_(std::max<int64_t>(slot_ms, 1)) {
  slots_.reserve(std::max<size_t>(slots, 1));
  for (size_t i = 0; i < std::max<size_t>(slots, 1); ++i)
    slots_.push_back({-1, SpaceSaving(capacity)});
}

bool WindowedHeavyHitters::Live(const Slot& slot, int64_t now_ms) const {
  const int64_t current = now_ms / slot_ms_;
  return slot.number >= 0 && slot.number <= current &&
         current - slot.number < static_cast<int64_t>(slots_.size());
}

void WindowedHeavyHitters::Add(std::string_view value, int64_t now_ms, uint64_t weight) {
  const int64_t number = now_ms / slot_ms_;
  Slot& slot = slots_[static_cast<size_t>(number) % slots_.size()];
  if (slot.number != number) {  // a slot from a window ago (or never used): start it afresh
    slot.summary.Clear();
    slot.number = number;
  }
  slot.summary.Add(value, weight);
}

uint64_t WindowedHeavyHitters::Total(int64_t now_ms) const {
  uint64_t total = 0;
  for (const Slot& slot : slots_) {
    if (Live(slot, now_ms)) total += slot.summary.total();
  }
  return total;
}

std::vector<HeavyHitter> WindowedHeavyHitters::Top(size_t n, int64_t now_ms) const {
  std::vector<const Slot*> live;
  for (const Slot& slot : slots_) {
    if (Live(slot, now_ms)) live.push_back(&slot);
  }
  // Every value some slot kept, with what each slot knows of it; a slot that did not keep it
  // may still have seen it up to its floor.
  std::unordered_map<std::string, HeavyHitter> merged;
  std::vector<std::vector<HeavyHitter>> tops;
  for (const Slot* slot : live) tops.push_back(slot->summary.Top());
  for (const auto& top : tops) {
    for (const HeavyHitter& h : top) merged.try_emplace(h.value, HeavyHitter{h.value, 0, 0});
  }
  for (size_t s = 0; s < live.size(); ++s) {
    std::unordered_map<std::string_view, const HeavyHitter*> kept;
    for (const HeavyHitter& h : tops[s]) kept.emplace(h.value, &h);
    const uint64_t floor = live[s]->summary.Floor();
    for (auto& [value, hitter] : merged) {
      if (auto it = kept.find(value); it != kept.end()) {
        hitter.count += it->second->count;
        hitter.error += it->second->error;
      } else {
        hitter.count += floor;
        hitter.error += floor;
      }
    }
  }
  std::vector<HeavyHitter> top;
  top.reserve(merged.size());
  for (auto& [value, hitter] : merged) top.push_back(std::move(hitter));
  SortByCount(top);
  if (top.size() > n) top.resize(n);
  return top;
}

}  // namespace sluice::http
