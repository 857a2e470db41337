#include "http/rejected_values.h"

#include <fmt/core.h>

namespace sluice::http {

RejectedValues::RejectedValues(size_t size) { Resize(size); }

void RejectedValues::Resize(size_t size) {
  std::unique_ptr<WindowedHeavyHitters> window;
  if (size > 0) {
    window = std::make_unique<WindowedHeavyHitters>(size * kCountersPerShown, kSlots, kSlotMs);
  }
  MutexLock lock(&mutex_);
  size_ = size;
  window_.swap(window);
}

void RejectedValues::Record(std::string_view value, int64_t now_ms) {
  MutexLock lock(&mutex_);
  if (window_) window_->Add(value, now_ms);
}

std::vector<HeavyHitter> RejectedValues::Top(int64_t now_ms) const {
  MutexLock lock(&mutex_);
  if (!window_) return {};
  return window_->Top(size_, now_ms);
}

uint64_t RejectedValues::Total(int64_t now_ms) const {
  MutexLock lock(&mutex_);
  return window_ ? window_->Total(now_ms) : 0;
}

TopRejected::TopRejected(size_t size) : size_(size) {}

void TopRejected::Resize(size_t size) {
  MutexLock lock(&mutex_);
  if (size == size_) return;
  size_ = size;
  for (auto* map : {&rules_, &limits_}) {
    for (auto& [name, values] : *map) values->Resize(size);
  }
}

size_t TopRejected::size() const {
  MutexLock lock(&mutex_);
  return size_;
}

RejectedValues* TopRejected::ForRule(const std::string& name) {
  MutexLock lock(&mutex_);
  std::unique_ptr<RejectedValues>& values = rules_[name];
  if (!values) values = std::make_unique<RejectedValues>(size_);
  return values.get();
}

RejectedValues* TopRejected::ForLimit(std::string_view name) {
  MutexLock lock(&mutex_);
  if (auto it = limits_.find(name); it != limits_.end()) return it->second.get();
  if (limits_.size() >= kMaxLimits) return nullptr;
  auto values = std::make_unique<RejectedValues>(size_);
  RejectedValues* kept = values.get();
  limits_.emplace(std::string(name), std::move(values));
  return kept;
}

std::vector<std::pair<std::string, const RejectedValues*>> TopRejected::Limits() const {
  MutexLock lock(&mutex_);
  std::vector<std::pair<std::string, const RejectedValues*>> limits;
  for (const auto& [name, values] : limits_) limits.emplace_back(name, values.get());
  return limits;
}

namespace {

// Separators no key or value of a sensible descriptor holds.
constexpr char kEntrySeparator = '\x1e';
constexpr char kKeySeparator = '\x1f';

// FNV-1a: stable across processes and builds, unlike std::hash.
uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

// Where the `n`th UTF-8 character begins (or the end), so that a prefix never cuts one in two.
size_t CharacterOffset(std::string_view text, size_t n) {
  size_t offset = 0;
  for (size_t seen = 0; offset < text.size(); ++offset) {
    const bool continuation = (static_cast<unsigned char>(text[offset]) & 0xC0) == 0x80;
    if (!continuation && seen++ == n) return offset;
  }
  return offset;
}

size_t CharacterCount(std::string_view text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

}  // namespace

std::string DescriptorValue(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string value;
  for (const auto& [k, v] : entries) {
    if (!value.empty()) value += kEntrySeparator;
    value.append(k).append(1, kKeySeparator).append(v);
  }
  return value;
}

std::string MaskedValue(std::string_view value) {
  const size_t shown = std::min<size_t>(6, CharacterCount(value) / 2);
  const uint64_t hash = Fnv1a(value);
  return fmt::format("{}…{:06x}", value.substr(0, CharacterOffset(value, shown)),
                     (hash >> 40) ^ (hash & 0xFFFFFF));
}

std::string ShownValue(std::string_view value, ValueKind kind, bool reveal) {
  if (kind == ValueKind::kPlain) return std::string(value);
  if (kind == ValueKind::kSecret) return reveal ? std::string(value) : MaskedValue(value);
  std::string shown;
  while (!value.empty()) {
    const size_t end = std::min(value.find(kEntrySeparator), value.size());
    const std::string_view entry = value.substr(0, end);
    const size_t split = entry.find(kKeySeparator);
    const std::string_view k = entry.substr(0, split);
    const std::string_view v =
        split == std::string_view::npos ? std::string_view() : entry.substr(split + 1);
    if (!shown.empty()) shown += ", ";
    shown.append(k).append("=").append(reveal ? std::string(v) : MaskedValue(v));
    value.remove_prefix(std::min(end + 1, value.size()));
  }
  return shown;
}

}  // namespace sluice::http
