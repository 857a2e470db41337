// The registry of algorithms: each value of a rule's `algorithm` is one AlgorithmKind, registered
// beside its arithmetic (token_bucket.cc, gcra.cc, fixed_window.cc) and listed once in
// algorithm_kinds.cc. The configuration, the limiter, the memory store and the status page find
// an algorithm's name, keys, limits and step only through it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sluice/rule.h"
#include "sluice/status.h"
#include "sluice/token_bucket.h"

namespace sluice {

struct AlgorithmKind {
  Algorithm id;
  std::string_view name;  // `algorithm` in the configuration and /status.json
  // After the key prefix: each algorithm's buckets under keys of their own, so that a rule that
  // changes algorithm starts afresh rather than reading another's state.
  std::string_view key_prefix;
  // One step on a bucket's state (none: a fresh bucket), as its Redis script takes it: what the
  // memory store and the local counts run.
  TakeOutcome (*take)(const std::optional<BucketState>& state, const Limit& limit, int64_t cost,
                      int64_t now_ms);
  // Ok when it can keep `limit` (a valid Limit); else why not.
  Status (*validate)(const Limit& limit);
  // Whether a bucket can be taken from in part or past empty (TakeTokensUpTo, TakeTokensInDebt):
  // what local counts (a lease is a take of up to k tokens) and costs reported after the fact
  // stand on.
  bool partial_takes;
};

// Every algorithm, the default (the token bucket) first.
const std::vector<AlgorithmKind>& AlgorithmKinds();

// The registration of `algorithm`.
const AlgorithmKind& AlgorithmOf(Algorithm algorithm);

// The algorithm the configuration's `name` names, or null.
const AlgorithmKind* AlgorithmNamed(std::string_view name);

// The registrations, each defined beside its arithmetic.
AlgorithmKind TokenBucketAlgorithm();
AlgorithmKind GcraAlgorithm();
AlgorithmKind FixedWindowAlgorithm();

}  // namespace sluice
