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

  void Apply(std::vector<BucketOp> ops, StoreCallback done) override SLUICE_EXCLUDES(mutex_);
  void ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) override
      SLUICE_EXCLUDES(mutex_);

  // Calls from now on fail with `error` (ok: they go through `inner` again).
  void FailWith(Status error) SLUICE_EXCLUDES(mutex_);
  // While held, calls wait unanswered until Release: a store slow to answer, or down.
  void Hold(bool held) SLUICE_EXCLUDES(mutex_);
  // Answers every call waiting so far, in the order they came (outside the lock: an answer may
  // call the store again, and that call waits for the next Release while held).
  void Release() SLUICE_EXCLUDES(mutex_);

  // The calls made so far, and how many.
  std::vector<Call> Calls() const SLUICE_EXCLUDES(mutex_);
  int calls() const SLUICE_EXCLUDES(mutex_);

 private:
  void Take(Call call, StoreCallback done) SLUICE_EXCLUDES(mutex_);
  void Answer(Call call, const StoreCallback& done, const Status& error);

  const std::shared_ptr<Store> inner_;
  mutable Mutex mutex_;
  std::vector<Call> calls_ SLUICE_GUARDED_BY(mutex_);
  Status error_ SLUICE_GUARDED_BY(mutex_);
  bool held_ SLUICE_GUARDED_BY(mutex_) = false;
  std::vector<std::function<void()>> waiting_ SLUICE_GUARDED_BY(mutex_);
};

// A QuotaStore of plain logic: one window for every quota (`window_start` to `window_end`, read
// at `now`), all or nothing per take, quotas marked spent answered without a take. Thread-safe.
class FakeQuotaStore final : public QuotaStore {
 public:
  FakeQuotaStore(int64_t window_start, int64_t window_end, int64_t now)
      : window_start_(window_start), window_end_(window_end), now_(now) {}

  void Take(std::vector<QuotaOp> ops, QuotaCallback done) override SLUICE_EXCLUDES(mutex_);
  std::optional<QuotaReply> KnownRejection(const QuotaOp& op) const override
      SLUICE_EXCLUDES(mutex_);
  bool Ready() const override { return true; }

  // Takes from now on fail with `error` (ok: they are answered again).
  void FailWith(Status error) SLUICE_EXCLUDES(mutex_);
  // `quota` ("bucket:value") is known to be spent: KnownRejection answers for it.
  void MarkSpent(const std::string& quota) SLUICE_EXCLUDES(mutex_);
  // What `quota` has used, and the takes made.
  int64_t Used(const std::string& quota) const SLUICE_EXCLUDES(mutex_);
  int takes() const SLUICE_EXCLUDES(mutex_);

 private:
  const int64_t window_start_, window_end_, now_;
  mutable Mutex mutex_;
  int takes_ SLUICE_GUARDED_BY(mutex_) = 0;
  Status error_ SLUICE_GUARDED_BY(mutex_);
  std::set<std::string> spent_ SLUICE_GUARDED_BY(mutex_);
  std::map<std::string, int64_t> used_ SLUICE_GUARDED_BY(mutex_);
};

}  // namespace sluice::testing
