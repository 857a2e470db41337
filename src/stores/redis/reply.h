// An owning handle for the replies hiredis parses, and small readers of them.
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <string_view>

namespace sluice::redis {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

inline bool IsError(const redisReply& reply) { return reply.type == REDIS_REPLY_ERROR; }

// A string or status reply.
inline bool IsText(const redisReply& reply) {
  return reply.type == REDIS_REPLY_STRING || reply.type == REDIS_REPLY_STATUS;
}

// The text of a string, status or error reply; empty for other types.
inline std::string_view Text(const redisReply& reply) {
  if (reply.str == nullptr) return {};
  return {reply.str, static_cast<size_t>(reply.len)};
}

// The value under `name` in a RESP2 map, sent as a flat array of names and values; null when
// there is none.
inline const redisReply* MapField(const redisReply& map, std::string_view name) {
  if (map.type != REDIS_REPLY_ARRAY) return nullptr;
  for (size_t i = 0; i + 1 < map.elements; i += 2) {
    if (IsText(*map.element[i]) && Text(*map.element[i]) == name) return map.element[i + 1];
  }
  return nullptr;
}

}  // namespace sluice::redis
