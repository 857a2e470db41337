#include "sluice/redis_store.h"

#include <algorithm>
#include <array>

#include "call_pipeline.h"
#include "credentials_or_load.h"
#include "redis_call.h"
#include "reply_join.h"

namespace sluice {

namespace asio = boost::asio;

namespace {

// `ops` split by algorithm, each part with the positions its ops had.
struct AlgorithmPart {
  std::vector<BucketOp> ops;
  std::vector<size_t> positions;
};

std::vector<AlgorithmPart> SplitByAlgorithm(std::vector<BucketOp> ops) {
  std::array<AlgorithmPart, redis::kAlgorithms.size()> parts;
  for (size_t i = 0; i < ops.size(); ++i) {
    AlgorithmPart& part = parts[redis::Index(ops[i].algorithm)];
    part.ops.push_back(std::move(ops[i]));
    part.positions.push_back(i);
  }
  std::vector<AlgorithmPart> used;
  for (AlgorithmPart& part : parts) {
    if (!part.ops.empty()) used.push_back(std::move(part));
  }
  return used;
}

bool OneAlgorithm(const std::vector<BucketOp>& ops) {
  return std::all_of(ops.begin(), ops.end(),
                     [&](const BucketOp& op) { return op.algorithm == ops.front().algorithm; });
}

// The pipeline for `options`, its credentials read here when the caller has none.
std::shared_ptr<redis::CallPipeline> MakePipeline(RedisOptions options,
                                                  std::shared_ptr<RedisCredentials> credentials,
                                                  asio::io_context* io) {
  std::string setup_error;
  credentials = redis::CredentialsOrLoad(options, std::move(credentials), setup_error);
  auto pipeline = std::make_shared<redis::CallPipeline>(std::move(options), std::move(credentials),
                                                        std::move(setup_error), io);
  pipeline->Start();
  return pipeline;
}

// The server as a metric's label: bounded by the configuration (a sentinel-named master is
// labelled by its name, whichever server it is now), and never a credential.
std::string NodeName(const RedisOptions& options) {
  if (options.sentinel) return "sentinel:" + options.sentinel->master;
  if (!options.unix_path.empty()) return "unix:" + options.unix_path;
  const bool ipv6 = options.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + options.host + "]" : options.host) + ":" + std::to_string(options.port);
}

}  // namespace

RedisStore::RedisStore(RedisOptions options)
    : node_(NodeName(options)), pipeline_(MakePipeline(std::move(options), nullptr, nullptr)) {}

RedisStore::RedisStore(RedisOptions options, asio::io_context& io)
    : node_(NodeName(options)), pipeline_(MakePipeline(std::move(options), nullptr, &io)) {}

RedisStore::RedisStore(RedisOptions options, std::shared_ptr<RedisCredentials> credentials,
                       asio::io_context* io)
    : node_(NodeName(options)),
      pipeline_(MakePipeline(std::move(options), std::move(credentials), io)) {}

RedisStore::~RedisStore() { pipeline_->Stop(); }

void RedisStore::Apply(std::vector<BucketOp> ops, StoreCallback done) {
  Apply(std::move(ops), RedisCall{}, std::move(done));
}

void RedisStore::ApplyAllOrNothing(std::vector<BucketOp> ops, StoreCallback done) {
  RedisCall call;
  call.all_or_nothing = true;
  Apply(std::move(ops), call, std::move(done));
}

void ApplyCall(RedisStore& store, std::vector<BucketOp> ops, const RedisCall& call,
               StoreCallback done) {
  store.Apply(std::move(ops), call, std::move(done));
}

void RedisStore::Apply(std::vector<BucketOp> ops, const RedisCall& call, StoreCallback done) {
  if (OneAlgorithm(ops)) return pipeline_->Submit(std::move(ops), call, std::move(done));
  if (call.all_or_nothing) {
    return done(Status::FailedPrecondition(
        "all-or-nothing needs one script call, and these rules use different algorithms"));
  }
  // A call per algorithm, in the same write; one answer once every call has answered (with the
  // first failure, if any), so that the caller hears after every op it sent has been decided.
  const size_t count = ops.size();
  std::vector<AlgorithmPart> parts = SplitByAlgorithm(std::move(ops));
  auto join = std::make_shared<stores::ReplyJoin>(
      count, parts.size(), stores::ReplyJoin::OnError::kAfterEveryPart, std::move(done));
  for (AlgorithmPart& part : parts) {
    pipeline_->Submit(
        std::move(part.ops), call,
        [join, positions = std::move(part.positions)](
            const Result<std::vector<BucketReply>>& result) { join->Answer(positions, result); });
  }
}

bool RedisStore::Ready() const { return pipeline_->Ready(); }

bool RedisStore::WaitReady(std::chrono::milliseconds timeout) const {
  return pipeline_->WaitReady(timeout);
}

RedisStoreStats RedisStore::Stats() const { return pipeline_->Stats(); }

std::vector<StoreNodeStatus> RedisStore::Nodes() const {
  return {{node_, pipeline_->Ready(), pipeline_->RoundTrips()}};
}

std::string RedisStore::LastError() const { return pipeline_->LastError(); }

}  // namespace sluice
