#include "topology.h"

#include "reply.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <string_view>

namespace sluice::cluster {

namespace {

using redis::IsText;
using redis::Text;

Status Malformed(std::string_view what) {
  return Status::StoreError("malformed cluster topology: " + std::string(what));
}

std::optional<uint16_t> Number(const redisReply& r, long long max) {
  long long value = -1;
  if (r.type == REDIS_REPLY_INTEGER) {
    value = r.integer;
  } else if (IsText(r)) {
    const std::string_view text = Text(r);
    std::from_chars(text.data(), text.data() + text.size(), value);
  }
  if (value < 0 || value > max) return std::nullopt;
  return static_cast<uint16_t>(value);
}

const redisReply* Field(const redisReply& map, std::string_view name) {
  return redis::MapField(map, name);
}

bool KnownHost(std::string_view host) { return !host.empty() && host != "?"; }

// The address clients should use: "endpoint", unless it is unknown, then "ip", then the host
// that was asked.
std::string NodeHost(const redisReply& node, std::string_view asked_host) {
  for (const char* name : {"endpoint", "ip"}) {
    const redisReply* value = Field(node, name);
    if (value != nullptr && IsText(*value) && KnownHost(Text(*value))) {
      return std::string(Text(*value));
    }
  }
  return std::string(asked_host);
}

// The port to use: "tls-port" for a TLS client, "port" otherwise, each falling back on the
// other (a node has at least one of them).
std::optional<uint16_t> NodePort(const redisReply& node, bool tls) {
  const char* preferred = tls ? "tls-port" : "port";
  const char* other = tls ? "port" : "tls-port";
  for (const char* name : {preferred, other}) {
    const redisReply* value = Field(node, name);
    if (value == nullptr) continue;
    const std::optional<uint16_t> port = Number(*value, 65535);
    if (port && *port != 0) return port;
  }
  return std::nullopt;
}

// A text field's value, empty when absent.
std::string TextField(const redisReply& map, std::string_view name) {
  const redisReply* value = Field(map, name);
  if (value == nullptr || !IsText(*value)) return "";
  return std::string(Text(*value));
}

bool Is(const redisReply* value, std::string_view expected) {
  return value != nullptr && IsText(*value) && Text(*value) == expected;
}

}  // namespace

Result<std::vector<SlotRange>> ParseClusterShards(const redisReply& reply,
                                                  std::string_view asked_host, bool tls) {
  if (reply.type != REDIS_REPLY_ARRAY) return Malformed("CLUSTER SHARDS is not an array");
  std::vector<SlotRange> ranges;
  for (size_t s = 0; s < reply.elements; ++s) {
    const redisReply& shard = *reply.element[s];
    const redisReply* slots = Field(shard, "slots");
    const redisReply* nodes = Field(shard, "nodes");
    if (slots == nullptr || nodes == nullptr || slots->type != REDIS_REPLY_ARRAY ||
        nodes->type != REDIS_REPLY_ARRAY || slots->elements % 2 != 0) {
      return Malformed("a shard without slots or nodes");
    }
    const redisReply* primary = nullptr;
    for (size_t n = 0; n < nodes->elements; ++n) {
      const redisReply& node = *nodes->element[n];
      if (Is(Field(node, "role"), "master") && Is(Field(node, "health"), "online")) {
        primary = &node;
      }
    }
    if (primary == nullptr) continue;  // its slots have no one to serve them for now
    const std::string host = NodeHost(*primary, asked_host);
    const std::optional<uint16_t> port = NodePort(*primary, tls);
    if (!port) return Malformed("a primary without a port");
    const std::string hostname = TextField(*primary, "hostname");
    for (size_t i = 0; i < slots->elements; i += 2) {
      const auto first = Number(*slots->element[i], 16383);
      const auto last = Number(*slots->element[i + 1], 16383);
      if (!first || !last || *first > *last) return Malformed("a bad slot range");
      ranges.push_back({*first, *last, host, *port, hostname});
    }
  }
  return ranges;
}

Result<std::vector<SlotRange>> ParseClusterSlots(const redisReply& reply,
                                                 std::string_view asked_host) {
  if (reply.type != REDIS_REPLY_ARRAY) return Malformed("CLUSTER SLOTS is not an array");
  std::vector<SlotRange> ranges;
  for (size_t i = 0; i < reply.elements; ++i) {
    const redisReply& entry = *reply.element[i];
    if (entry.type != REDIS_REPLY_ARRAY || entry.elements < 3 ||
        entry.element[2]->type != REDIS_REPLY_ARRAY || entry.element[2]->elements < 2) {
      return Malformed("a CLUSTER SLOTS entry without a primary");
    }
    const redisReply& primary = *entry.element[2];
    const auto first = Number(*entry.element[0], 16383);
    const auto last = Number(*entry.element[1], 16383);
    const auto port = Number(*primary.element[1], 65535);
    if (!first || !last || *first > *last || !IsText(*primary.element[0]) || !port) {
      return Malformed("a bad CLUSTER SLOTS entry");
    }
    const std::string_view host = Text(*primary.element[0]);
    const std::string hostname =
        primary.elements >= 4 ? TextField(*primary.element[3], "hostname") : "";
    ranges.push_back(
        {*first, *last, std::string(KnownHost(host) ? host : asked_host), *port, hostname});
  }
  return ranges;
}

Result<Redirect> ParseRedirect(std::string_view error) {
  Redirect redirect{};
  if (error.starts_with("MOVED ")) {
    redirect.kind = Redirect::Kind::kMoved;
    error.remove_prefix(6);
  } else if (error.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::kAsk;
    error.remove_prefix(4);
  } else {
    return Status::InvalidArgument("not a redirection");
  }
  const size_t space = error.find(' ');
  const size_t colon = error.rfind(':');
  if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
    return Status::InvalidArgument("malformed redirection");
  }
  unsigned slot = 0;
  unsigned port = 0;
  const auto slot_end = std::from_chars(error.data(), error.data() + space, slot);
  const auto port_end =
      std::from_chars(error.data() + colon + 1, error.data() + error.size(), port);
  if (slot_end.ec != std::errc() || slot_end.ptr != error.data() + space || slot > 16383 ||
      port_end.ec != std::errc() || port == 0 || port > 65535) {
    return Status::InvalidArgument("malformed redirection");
  }
  redirect.slot = static_cast<uint16_t>(slot);
  redirect.port = static_cast<uint16_t>(port);
  redirect.host = std::string(error.substr(space + 1, colon - space - 1));
  return redirect;
}

bool IsTransientClusterError(std::string_view error) {
  constexpr std::array<std::string_view, 5> kTransient = {"TRYAGAIN", "CLUSTERDOWN", "LOADING",
                                                          "READONLY", "MASTERDOWN"};
  return std::ranges::any_of(
      kTransient, [error](std::string_view prefix) { return error.starts_with(prefix); });
}

}  // namespace sluice::cluster
