// A fault drill for tests: threads check buckets without a break while a FaultProxy injects one
// fault after another between Sluice and Redis; of every check it asserts that it is decided
// within the store's timeout and a slack, by the failure policy when not by the store, and never
// by a reply meant for another check; of every fault, that it was felt and that the store
// answers again soon after it ends. It prints what it measured.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "fault_proxy.h"

namespace sluice::testing {

// The store timeout drills run with, and the slack a decision may take beyond it.
constexpr std::chrono::milliseconds kDrillTimeout{100};
constexpr std::chrono::milliseconds kDrillSlack{50};
// A fault that leaves the connection up ends within kDrillRecovery; one that costs it (the store
// then connects again after a backoff of up to 2 s), within kDrillReconnectRecovery.
constexpr std::chrono::milliseconds kDrillRecovery{2000};
constexpr std::chrono::milliseconds kDrillReconnectRecovery{5000};

// One fault of a drill: how long it lasts, what the checks meanwhile must show, and how soon
// after its end the store must answer again.
struct FaultCase {
  Fault fault;
  std::chrono::milliseconds delay;  // kLatency's, kByteByByte's
  std::chrono::milliseconds lasts;
  // Whether some check meanwhile is answered (a slow server still answers in time), else
  // decided by the failure policy (the store cannot answer).
  bool answers;
  std::chrono::milliseconds recovery;
};

// Every fault the proxy knows, in the order a drill injects them; a reset lasts `reset_lasts`
// (long enough, and the reconnection backoff reaches its cap).
std::vector<FaultCase> EveryFault(std::chrono::milliseconds reset_lasts);

// A bucket the drill checks: the attribute value that keys it and its capacity, which no other
// bucket of the drill shares.
struct DrillBucket {
  std::string value;
  int64_t capacity = 0;
  // A thousandth of the capacity a day: a drill's minutes give back less than a token.
  int64_t TokensPerDay() const { return capacity / 1000; }
  int64_t sent = 0;      // checks sent
  int64_t answered = 0;  // of them, decided by the store
};

// `threads` x `per_thread` buckets named PREFIX<thread>_<i>, of capacities 10,000, 20,000, ...:
// a count in an answer says whose bucket it is, so that a reply matched to another check shows
// as a count the check's own bucket cannot have. The caller's rules must give them these limits.
std::vector<std::vector<DrillBucket>> DrillBuckets(size_t threads, size_t per_thread,
                                                   const std::string& prefix);

// One thread per list of buckets, each checking its buckets in turn, a check after another.
class CheckLoad {
 public:
  // Checks one bucket: the tokens left when the store decided, nullopt when the failure policy
  // did (the function asserts that it decided as configured).
  using Check = std::function<std::optional<int64_t>(size_t thread, const DrillBucket&)>;
  // The tokens the store has taken from a bucket so far.
  using Charged = std::function<int64_t(size_t thread, const DrillBucket&)>;

  CheckLoad(std::vector<std::vector<DrillBucket>> buckets, Check check, Charged charged);
  ~CheckLoad();
  CheckLoad(const CheckLoad&) = delete;
  CheckLoad& operator=(const CheckLoad&) = delete;

  // What one check came to.
  struct Record {
    size_t thread;
    std::chrono::steady_clock::time_point submitted;
    std::chrono::steady_clock::time_point decided;
    bool answered;  // by the store; else by the failure policy
  };
  std::vector<Record> Records() const;

  size_t threads() const { return buckets_.size(); }

  // For each thread, the tokens the store has taken from its buckets less the checks it
  // answered: checks charged whose answers came too late, or never. Asked between checks.
  std::vector<int64_t> Unanswered();

 private:
  void Run(size_t t);
  void Note(size_t t, const Record& record, std::optional<int64_t> remaining, DrillBucket& bucket);

  const Check check_;
  const Charged charged_;
  mutable std::mutex mutex_;  // guards what follows but the threads
  std::condition_variable changed_;
  std::vector<std::vector<DrillBucket>> buckets_;
  std::vector<Record> records_;
  size_t checking_ = 0;  // threads in a check
  bool paused_ = false;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Injects each of `cases` in turn through `proxy`, ends it, and waits for the store to answer
// again, while `load` runs; the threads not `faulted` (another shard's) must be answered all
// along and never charged without an answer. Prints a line of figures per fault, naming
// `topology`.
void Drill(const std::string& topology, FaultProxy& proxy, CheckLoad& load,
           const std::vector<bool>& faulted, const std::vector<FaultCase>& cases);

}  // namespace sluice::testing
