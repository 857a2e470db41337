// Stand-ins for a store in unit tests of pure logic (the limiter's policies, the local counts):
// they record what they are asked, and answer through a real store, with an error, or when the
// test says. A test that needs only a working store uses MemoryStore itself.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sluice/mutex.h"
#include "sluice/quota_store.h"
#include "sluice/store.h"

namespace sluice::testing {

// A Store that answers each call through `inner` (such as a MemoryStore on a test's clock), or
// with the error set by FailWith, at once or, while held, when Release says. Thread-safe.
class FakeStore final : public Store {
 public:
  // One call as it came.
  struct Call {
    std::vector<BucketOp> ops;
    bool all_or_nothing = false;
  };

  // Without `inner`, every call fails (with kUnavailable until FailWith says otherwise).
  explicit FakeStore(std::shared_ptr<Store> inner = nullptr);

  void Apply(std::vector<BucketOp> ops, StoreCallback done) override EXCLUDES(mutex_);
  void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) override EXCLUDES(mutex_);

  // Calls from now on fail with `error` (ok: they go through `inner` again).
  void FailWith(Status error) EXCLUDES(mutex_);
  // While held, calls wait unanswered until Release: a store slow to answer, or down.
  void Hold(bool held) EXCLUDES(mutex_);
  // Answers every call waiting so far, in the order they came (outside the lock: an answer may
  // call the store again, and that call waits for the next Release while held).
  void Release() EXCLUDES(mutex_);

  // The calls made so far, and how many.
  std::vector<Call> Calls() const EXCLUDES(mutex_);
  int calls() const EXCLUDES(mutex_);

 private:
  void Take(Call call, StoreCallback done) EXCLUDES(mutex_);
  void Answer(Call call, const StoreCallback& done, const Status& error);

  const std::shared_ptr<Store> inner_;
  mutable Mutex mutex_;
  std::vector<Call> calls_ GUARDED_BY(mutex_);
  Status error_ GUARDED_BY(mutex_);
  bool held_ GUARDED_BY(mutex_) = false;
  std::vector<std::function<void()>> waiting_ GUARDED_BY(mutex_);
};

// A QuotaStore of plain logic: one window for every quota (`window_start` to `window_end`, read
// at `now`), all or nothing per take, quotas marked spent answered without a take. Thread-safe.
class FakeQuotaStore final : public QuotaStore {
 public:
  FakeQuotaStore(int64_t window_start, int64_t window_end, int64_t now)
      : window_start_(window_start), window_end_(window_end), now_(now) {}

  void Take(std::vector<QuotaOp> ops, QuotaCallback done) override EXCLUDES(mutex_);
  std::optional<QuotaReply> KnownRejection(const QuotaOp& op) const override EXCLUDES(mutex_);
  bool Ready() const override { return true; }

  // Takes from now on fail with `error` (ok: they are answered again).
  void FailWith(Status error) EXCLUDES(mutex_);
  // `quota` ("bucket:value") is known to be spent: KnownRejection answers for it.
  void MarkSpent(const std::string& quota) EXCLUDES(mutex_);
  // What `quota` has used, and the takes made.
  int64_t Used(const std::string& quota) const EXCLUDES(mutex_);
  int takes() const EXCLUDES(mutex_);

 private:
  const int64_t window_start_, window_end_, now_;
  mutable Mutex mutex_;
  int takes_ GUARDED_BY(mutex_) = 0;
  Status error_ GUARDED_BY(mutex_);
  std::set<std::string> spent_ GUARDED_BY(mutex_);
  std::map<std::string, int64_t> used_ GUARDED_BY(mutex_);
};

}  // namespace sluice::testing
