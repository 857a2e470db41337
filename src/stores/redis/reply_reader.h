// The replies in a byte stream from Redis: hiredis's RESP reader, behind a RespScanner that
// bounds what each reply may declare before hiredis reads it.
#pragma once

#include <cstddef>
#include <memory>

#include "reply.h"
#include "resp_scanner.h"
#include "sluice/status.h"

namespace sluice::redis {

// Every reply Sluice reads comes through one of these, one per connection.
class ReplyReader {
 public:
  explicit ReplyReader(RespLimits limits = {});

  // Takes the next bytes read from the connection. An error when they are not RESP, or declare
  // more than `limits` allows: hiredis never sees them, and the caller drops the connection.
  Status Feed(const char* data, size_t size);

  // The next complete reply; null when none is complete yet; an error when hiredis found the
  // bytes malformed.
  Result<ReplyPtr> Next();

 private:
  struct ReaderDeleter {
    void operator()(redisReader* r) const { redisReaderFree(r); }
  };

  RespScanner scanner_;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
};

}  // namespace sluice::redis
