#include "bucket_calls.h"

#include "reply.h"
#include "sluice/redis_store.h"

namespace sluice {

namespace redis {

void AppendCodes(std::string& codes, const std::vector<BucketOp>& ops, bool all_or_nothing) {
  for (const BucketOp& op : ops) {
    if (all_or_nothing) {
      codes.push_back(op.enforced ? '1' : '0');
    } else {
      codes.push_back(op.up_to ? 'u' : op.debt ? 'd' : '0');
    }
  }
}

bool IsBucketCallReply(const redisReply& reply, size_t ops) {
  return reply.type == REDIS_REPLY_ARRAY && reply.elements == kRepliesPerOp * ops;
}

Result<std::vector<BucketReply>> ParseBucketReplies(const redisReply& reply, size_t offset,
                                                    const std::vector<BucketOp>& ops) {
  const size_t count = ops.size();
  const redisReply* const* element = reply.element + offset;
  for (size_t i = 0; i < kRepliesPerOp * count; ++i) {
    if (IsError(*element[i])) return Status::StoreError(std::string(Text(*element[i])));
    if (element[i]->type != REDIS_REPLY_INTEGER) {
      return Status::StoreError("the bucket script returned a non-integer");
    }
  }
  std::vector<BucketReply> replies(count);
  for (size_t i = 0; i < count; ++i) {
    const redisReply* const* op = element + kRepliesPerOp * i;
    const long long first = op[0]->integer;
    replies[i] = {.allowed = ops[i].up_to ? first == ops[i].cost : first == 1,
                  .remaining = op[1]->integer,
                  .retry_ms = op[2]->integer,
                  .granted = ops[i].up_to ? first : 0,
                  .reset_ms = op[3]->integer};
  }
  return replies;
}

bool IsMissingCode(std::string_view error) {
  return error.starts_with("NOSCRIPT") || error.starts_with("ERR Function not found");
}

bool IsRedirection(std::string_view error) {
  return error.starts_with("MOVED ") || error.starts_with("ASK ") || error.starts_with("TRYAGAIN");
}

bool IsNotHeldHere(std::string_view error) {
  return error.find("Script attempted to access a non local key") != std::string_view::npos ||
         error.find("Script attempted to execute a command while the cluster is down") !=
             std::string_view::npos;
}

bool IsReadOnly(std::string_view error) { return error.starts_with("READONLY"); }

std::string_view FunctionName(Algorithm algorithm, BucketLayout layout) {
  switch (algorithm) {
    case Algorithm::kGcra:
      return "sluice_gcra";
    case Algorithm::kFixedWindow:
      return "sluice_fixed_window";
    case Algorithm::kTokenBucket:
      break;
  }
  return layout == BucketLayout::kCompact ? "sluice_token_bucket_compact" : "sluice_token_bucket";
}

}  // namespace redis

std::string_view BucketScript(Algorithm algorithm, BucketLayout layout) {
  switch (algorithm) {
    case Algorithm::kGcra:
      return redis::GcraScript();
    case Algorithm::kFixedWindow:
      return redis::FixedWindowScript();
    case Algorithm::kTokenBucket:
      break;
  }
  return layout == BucketLayout::kCompact ? redis::TokenBucketCompactScript()
                                          : redis::TokenBucketHashScript();
}

std::string FunctionLibrary() {
  std::string library = "#!lua name=sluice\n";
  auto add = [&library](Algorithm algorithm, BucketLayout layout) {
    std::string_view script = BucketScript(algorithm, layout);
    script.remove_prefix(script.find('\n') + 1);  // the flags line: a function's are below
    library.append("\nredis.register_function{function_name = '")
        .append(redis::FunctionName(algorithm, layout));
    library.append("', flags = {'allow-cross-slot-keys'}, callback = function(KEYS, ARGV)\n")
        .append(script)
        .append("end}\n");
  };
  for (Algorithm algorithm : redis::kAlgorithms) add(algorithm, BucketLayout::kHash);
  add(Algorithm::kTokenBucket, BucketLayout::kCompact);
  return library;
}

}  // namespace sluice
