#include "reply_reader.h"

#include <string>
#include <string_view>

namespace sluice::redis {

ReplyReader::ReplyReader(RespLimits limits) : scanner_(limits), reader_(redisReaderCreate()) {}

Status ReplyReader::Feed(const char* data, size_t size) {
  if (Status s = scanner_.Scan(std::string_view(data, size)); !s.ok()) return s;
  if (redisReaderFeed(reader_.get(), data, size) != REDIS_OK) {
    return Status::StoreError(std::string("protocol error: ") + reader_->errstr);
  }
  return {};
}

Result<ReplyPtr> ReplyReader::Next() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
    return Status::StoreError(std::string("protocol error: ") + reader_->errstr);
  }
  return ReplyPtr(static_cast<redisReply*>(raw));
}

}  // namespace sluice::redis
