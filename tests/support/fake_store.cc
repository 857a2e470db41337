#include "support/fake_store.h"

#include <utility>

namespace sluice::testing {

FakeStore::FakeStore(std::shared_ptr<Store> inner) : inner_(std::move(inner)) {
  if (!inner_) error_ = Status::Unavailable("a fake store with nothing behind it");
}

void FakeStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  Take({std::move(ops), false}, std::move(done));
}

void FakeStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  Take({std::move(ops), true}, std::move(done));
}

void FakeStore::Take(Call call, StoreCallback done) {
  Status error;
  {
    MutexLock lock(&mutex_);
    calls_.push_back(call);
    error = error_;
    if (held_) {
      waiting_.emplace_back([this, call = std::move(call), done = std::move(done), error]() {
        Answer(call, done, error);
      });
      return;
    }
  }
  Answer(std::move(call), done, error);
}

void FakeStore::Answer(Call call, const StoreCallback& done, const Status& error) {
  if (!error.ok()) return done(error);
  if (call.all_or_nothing) return inner_->ApplyAllOrNothing(std::move(call.ops), done);
  inner_->Apply(std::move(call.ops), done);
}

void FakeStore::FailWith(Status error) {
  MutexLock lock(&mutex_);
  error_ = std::move(error);
}

void FakeStore::Hold(bool held) {
  MutexLock lock(&mutex_);
  held_ = held;
}

void FakeStore::Release() {
  std::vector<std::function<void()>> waiting;
  {
    MutexLock lock(&mutex_);
    waiting.swap(waiting_);
  }
  for (auto& answer : waiting) answer();
}

std::vector<FakeStore::Call> FakeStore::Calls() const {
  MutexLock lock(&mutex_);
  return calls_;
}

int FakeStore::calls() const {
  MutexLock lock(&mutex_);
  return static_cast<int>(calls_.size());
}

void FakeQuotaStore::Take(std::vector<QuotaOp> ops, QuotaCallback done) {
  std::vector<QuotaReply> replies;
  Status error;
  {
    MutexLock lock(&mutex_);
    ++takes_;
    error = error_;
    if (!error.ok()) ops.clear();
    bool all_fit = true;
    for (const QuotaOp& op : ops) {
      if (op.enforced && used_[op.bucket + ":" + op.value] + op.cost > op.limit) all_fit = false;
    }
    for (const QuotaOp& op : ops) {
      int64_t& used = used_[op.bucket + ":" + op.value];
      const bool fits = used + op.cost <= op.limit;
      if (all_fit && fits) used += op.cost;
      replies.push_back({fits, all_fit && fits, used, window_start_, window_end_, now_});
    }
  }
  if (!error.ok()) return done(error);
  done(std::move(replies));
}

std::optional<QuotaReply> FakeQuotaStore::KnownRejection(const QuotaOp& op) const {
  MutexLock lock(&mutex_);
  if (!spent_.contains(op.bucket + ":" + op.value)) return std::nullopt;
  return QuotaReply{false, false, op.limit, window_start_, window_end_, now_};
}

void FakeQuotaStore::FailWith(Status error) {
  MutexLock lock(&mutex_);
  error_ = std::move(error);
}

void FakeQuotaStore::MarkSpent(const std::string& quota) {
  MutexLock lock(&mutex_);
  spent_.insert(quota);
}

int64_t FakeQuotaStore::Used(const std::string& quota) const {
  MutexLock lock(&mutex_);
  const auto it = used_.find(quota);
  return it == used_.end() ? 0 : it->second;
}

int FakeQuotaStore::takes() const {
  MutexLock lock(&mutex_);
  return takes_;
}

}  // namespace sluice::testing
