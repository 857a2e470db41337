// Redis's answers to the bucket scripts: RESP bytes through the ReplyReader (RespScanner's bounds,
// then hiredis's reader, as RedisLink reads them) into the pipeline's handling of a call of several
// checks: errors classified, the shape checked (IsBucketCallReply), each check's part parsed
// (ParseBucketReplies). The first byte chooses how many checks the call had and how many ops each.
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bucket_calls.h"
#include "reply.h"
#include "reply_reader.h"
#include "resp_scanner.h"

namespace {

using sluice::BucketOp;

// Up to 4 checks of 1 to 4 ops each; some ops take up to their cost.
std::vector<std::vector<BucketOp>> ChecksOf(uint8_t shape) {
  std::vector<std::vector<BucketOp>> checks((shape & 3) + 1);
  for (size_t c = 0; c < checks.size(); ++c) {
    const size_t ops = ((shape >> (2 + c)) & 3) + 1;
    for (size_t i = 0; i < ops; ++i) {
      checks[c].push_back({.key = "k", .limit = {10, 10, 1000}, .cost = 3, .up_to = i == 1});
    }
  }
  return checks;
}

void Handle(const redisReply& reply, const std::vector<std::vector<BucketOp>>& checks) {
  using namespace sluice::redis;
  if (IsError(reply)) {
    (void)IsMissingCode(Text(reply));
    (void)IsRedirection(Text(reply));
    (void)IsNotHeldHere(Text(reply));
    (void)IsReadOnly(Text(reply));
    return;
  }
  size_t count = 0;
  for (const auto& ops : checks) count += ops.size();
  if (!IsBucketCallReply(reply, count)) return;
  size_t offset = 0;
  for (const auto& ops : checks) {
    (void)ParseBucketReplies(reply, offset, ops);
    offset += kRepliesPerOp * ops.size();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<std::vector<BucketOp>> checks = ChecksOf(data[0]);
  const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  // The framing is read as it comes: a byte at a time, it is judged as it is whole.
  sluice::redis::RespScanner whole;
  sluice::redis::RespScanner pieces;
  bool pieces_ok = true;
  for (size_t i = 0; i < bytes.size() && pieces_ok; ++i) {
    pieces_ok = pieces.Scan(bytes.substr(i, 1)).ok();
  }
  if (whole.Scan(bytes).ok() != pieces_ok) __builtin_trap();

  sluice::redis::ReplyReader reader;
  if (!reader.Feed(bytes.data(), bytes.size()).ok()) return 0;
  for (;;) {
    sluice::Result<sluice::redis::ReplyPtr> reply = reader.Next();
    if (!reply.ok() || *reply == nullptr) break;
    Handle(**reply, checks);
  }
  return 0;
}
