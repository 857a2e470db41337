#include "baselines.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <thread>

#include "sluice/redis_store.h"

namespace sluice::baselines {
namespace {

// Deletes the lock only if it still holds this client's token. A GET and then a DEL would be two
// commands: between them the lock can expire and another client take it, and the DEL would then
// remove that client's lock, letting a third in beside it.
constexpr std::string_view kReleaseScript =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end "
    "return 0";

std::string Text(const redisReply* reply) {
  if (reply->str == nullptr) return {};
  return {reply->str, reply->len};
}

[[noreturn]] void Fail(const std::string& what) { throw std::runtime_error(what); }

void ExpectType(const redisReply* reply, int type, std::string_view command) {
  if (reply->type == type) return;
  if (reply->type == REDIS_REPLY_ERROR) Fail(std::string(command) + ": " + Text(reply));
  Fail(std::string(command) + ": unexpected reply type " + std::to_string(reply->type));
}

double ParseDouble(const redisReply* reply) {
  const std::string text = Text(reply);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') Fail("not a number in the bucket: " + text);
  return value;
}

// The shortest text that reads back as the same double, as Redis keeps a Lua number.
std::string FormatDouble(double value) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (error != std::errc()) Fail("cannot format a number");
  return {buffer, end};
}

std::string RandomHex() {
  std::random_device device;
  const uint64_t value = (static_cast<uint64_t>(device()) << 32) | device();
  char buffer[17];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value, 16);
  (void)error;
  return {buffer, end};
}

}  // namespace

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kSeparate:
      return "separate";
    case Method::kWatch:
      return "watch";
    case Method::kLock:
      return "lock";
    case Method::kScript:
      return "script";
    case Method::kScriptFixedWindow:
      return "script-fixed-window";
    case Method::kPostgresSync:
      return "postgres-sync";
    case Method::kPostgresAsync:
      return "postgres-async";
    case Method::kPostgresQuotaStore:
      return "postgres-quota-store";
    case Method::kMemcachedIncr:
      return "memcached-incr";
    case Method::kMemcachedCas:
      return "memcached-cas";
  }
  return "?";
}

std::optional<Method> ParseMethod(std::string_view name) {
  for (Method method : kAllMethods) {
    if (MethodName(method) == name) return method;
  }
  return std::nullopt;
}

Server ServerOf(Method method) {
  switch (method) {
    case Method::kPostgresSync:
    case Method::kPostgresAsync:
    case Method::kPostgresQuotaStore:
      return Server::kPostgres;
    case Method::kMemcachedIncr:
    case Method::kMemcachedCas:
      return Server::kMemcached;
    default:
      return Server::kRedis;
  }
}

bool IsFixedWindow(Method method) {
  return method == Method::kScriptFixedWindow || method == Method::kMemcachedIncr ||
         method == Method::kPostgresQuotaStore;
}

Client::Client(const std::string& host, uint16_t port, Options options)
    : options_(std::move(options)), lock_owner_(RandomHex()), rng_state_(std::random_device{}()) {
  const timeval timeout{5, 0};
  context_ = redisConnectWithTimeout(host.c_str(), port, timeout);
  if (context_ == nullptr || context_->err != 0) {
    const std::string why = context_ != nullptr ? context_->errstr : "out of memory";
    if (context_ != nullptr) redisFree(context_);
    Fail("cannot connect to " + host + ":" + std::to_string(port) + ": " + why);
  }
  redisSetTimeout(context_, timeout);
  LoadScript(Algorithm::kTokenBucket);
  LoadScript(Algorithm::kFixedWindow);
}

Client::~Client() { redisFree(context_); }

std::vector<Client::Reply> Client::RoundTrip(
    const std::vector<std::vector<std::string>>& commands) {
  for (const std::vector<std::string>& args : commands) {
    std::vector<const char*> argv;
    std::vector<size_t> lengths;
    for (const std::string& arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    if (redisAppendCommandArgv(context_, static_cast<int>(args.size()), argv.data(),
                               lengths.data()) != REDIS_OK) {
      Fail(std::string("redis: ") + context_->errstr);
    }
  }
  std::vector<Reply> replies;
  for (size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(context_, &reply) != REDIS_OK || reply == nullptr) {
      Fail(std::string("redis connection broke: ") + context_->errstr);
    }
    replies.emplace_back(static_cast<redisReply*>(reply));
  }
  ++round_trips_;
  return replies;
}

Client::Reply Client::Command(const std::vector<std::string>& args) {
  return std::move(RoundTrip({args}).front());
}

Client::Read Client::ReadBucket(const std::string& key, const std::vector<std::string>& first) {
  std::vector<std::vector<std::string>> commands;
  if (!first.empty()) commands.push_back(first);
  commands.push_back({"TIME"});
  commands.push_back({"HMGET", key, "tokens", "ts"});
  std::vector<Reply> replies;
  if (options_.fewest_round_trips) {
    replies = RoundTrip(commands);
  } else {
    for (const std::vector<std::string>& command : commands) replies.push_back(Command(command));
  }
  if (!first.empty()) ExpectType(replies.front().get(), REDIS_REPLY_STATUS, first.front());

  const redisReply* time = replies[replies.size() - 2].get();
  ExpectType(time, REDIS_REPLY_ARRAY, "TIME");
  if (time->elements != 2) Fail("TIME: not two numbers");
  // As the script reads it: seconds * 1000 + floor(microseconds / 1000).
  Read read;
  read.now_ms =
      std::stoll(Text(time->element[0])) * 1000 + std::stoll(Text(time->element[1])) / 1000;

  const redisReply* fields = replies.back().get();
  ExpectType(fields, REDIS_REPLY_ARRAY, "HMGET");
  if (fields->elements != 2) Fail("HMGET: not two fields");
  // No key: a full bucket. Both fields are always written together.
  if (fields->element[0]->type == REDIS_REPLY_STRING &&
      fields->element[1]->type == REDIS_REPLY_STRING) {
    read.state = BucketState{ParseDouble(fields->element[0]),
                             static_cast<int64_t>(ParseDouble(fields->element[1]))};
  }
  return read;
}

std::vector<std::vector<std::string>> Client::WriteBucket(const std::string& key,
                                                          const TakeOutcome& taken) {
  // PEXPIRE with 0 (a full bucket) deletes the key, as in the script.
  return {{"HSET", key, "tokens", FormatDouble(taken.state.tokens), "ts",
           std::to_string(taken.state.updated_ms)},
          {"PEXPIRE", key, std::to_string(taken.ttl_ms)}};
}

void Client::LoadScript(Algorithm algorithm) {
  Reply sha = Command({"SCRIPT", "LOAD", std::string(BucketScript(algorithm))});
  ExpectType(sha.get(), REDIS_REPLY_STRING, "SCRIPT LOAD");
  script_shas_[algorithm] = Text(sha.get());
}

void Client::BeforeWrite(int attempt) const {
  if (options_.before_write) options_.before_write(attempt);
}

Outcome Client::Check(Method method, const std::string& key, const Limit& limit, int64_t cost) {
  switch (method) {
    case Method::kSeparate:
      return Separate(key, limit, cost);
    case Method::kWatch:
      return Watch(key, limit, cost);
    case Method::kLock:
      return Lock(key, limit, cost);
    case Method::kScript:
      return Script(key, limit, cost);
    case Method::kScriptFixedWindow:
      return Script(key, limit, cost, Algorithm::kFixedWindow);
    default:
      Fail(std::string(MethodName(method)) + " is not a method on Redis");
  }
}

Outcome Client::Separate(const std::string& key, const Limit& limit, int64_t cost) {
  round_trips_ = 0;
  const Read read = ReadBucket(key);
  const TakeOutcome taken = TakeTokens(read.state, limit, cost, read.now_ms);
  BeforeWrite(0);
  for (const Reply& reply : RoundTrip(WriteBucket(key, taken))) {
    if (reply->type == REDIS_REPLY_ERROR) Fail("write: " + Text(reply.get()));
  }
  return {.reply = taken.reply, .round_trips = round_trips_};
}

Outcome Client::Watch(const std::string& key, const Limit& limit, int64_t cost) {
  round_trips_ = 0;
  Outcome out;
  for (int attempt = 0;; ++attempt) {
    const Read read = ReadBucket(key, {"WATCH", key});
    const TakeOutcome taken = TakeTokens(read.state, limit, cost, read.now_ms);
    BeforeWrite(attempt);
    // A rejection is written too, as the script writes it: its EXEC also proves that the
    // bucket it decided on was still the bucket in Redis.
    std::vector<std::vector<std::string>> transaction = WriteBucket(key, taken);
    transaction.insert(transaction.begin(), {"MULTI"});
    transaction.push_back({"EXEC"});
    const std::vector<Reply> replies = RoundTrip(transaction);
    for (const Reply& reply : replies) {
      if (reply->type == REDIS_REPLY_ERROR) Fail("MULTI/EXEC: " + Text(reply.get()));
    }
    // EXEC also clears the WATCH, whether it ran the transaction or not.
    if (replies.back()->type == REDIS_REPLY_ARRAY) {
      out.reply = taken.reply;
      break;
    }
    ExpectType(replies.back().get(), REDIS_REPLY_NIL, "EXEC");
    if (++out.retries > options_.max_watch_retries) {
      out.aborted = true;
      break;
    }
  }
  out.round_trips = round_trips_;
  return out;
}

Outcome Client::Lock(const std::string& key, const Limit& limit, int64_t cost) {
  round_trips_ = 0;
  Outcome out;
  const std::string lock_key = "lock:" + key;
  const std::string token = lock_owner_ + ":" + std::to_string(++lock_serial_);
  int64_t backoff_us = options_.lock_backoff_min_us;
  for (int attempt = 0;; ++attempt) {
    Reply taken =
        Command({"SET", lock_key, token, "NX", "PX", std::to_string(options_.lock_ttl_ms)});
    if (taken->type == REDIS_REPLY_STATUS) break;  // OK: ours
    ExpectType(taken.get(), REDIS_REPLY_NIL, "SET NX");
    ++out.retries;
    if (attempt + 1 >= options_.max_lock_attempts) {
      out.aborted = true;
      out.round_trips = round_trips_;
      return out;
    }
    // Sleep between half and all of the backoff, so that waiters spread out.
    rng_state_ = rng_state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    const auto jitter =
        static_cast<int64_t>((rng_state_ >> 33) % static_cast<uint64_t>(backoff_us / 2 + 1));
    std::this_thread::sleep_for(std::chrono::microseconds(backoff_us - jitter));
    backoff_us = std::min(backoff_us * 2, options_.lock_backoff_max_us);
  }

  const Read read = ReadBucket(key);
  const TakeOutcome taken = TakeTokens(read.state, limit, cost, read.now_ms);
  BeforeWrite(0);
  std::vector<std::vector<std::string>> write = WriteBucket(key, taken);
  const std::vector<std::string> release = {"EVAL", std::string(kReleaseScript), "1", lock_key,
                                            token};
  std::vector<Reply> replies;
  if (options_.fewest_round_trips) {
    write.push_back(release);
    replies = RoundTrip(write);
  } else {
    replies = RoundTrip(write);
    replies.push_back(Command(release));
  }
  for (const Reply& reply : replies) {
    if (reply->type == REDIS_REPLY_ERROR) Fail("lock write/release: " + Text(reply.get()));
  }
  ExpectType(replies.back().get(), REDIS_REPLY_INTEGER, "release");
  out.lost_lock = replies.back()->integer != 1;
  out.reply = taken.reply;
  out.round_trips = round_trips_;
  return out;
}

Outcome Client::Script(const std::string& key, const Limit& limit, int64_t cost,
                       Algorithm algorithm) {
  round_trips_ = 0;
  Outcome out;
  std::vector<std::string> call = {"EVALSHA",
                                   script_shas_.at(algorithm),
                                   "1",
                                   key,
                                   std::to_string(limit.capacity),
                                   std::to_string(limit.tokens),
                                   std::to_string(limit.period_ms),
                                   std::to_string(cost)};
  Reply reply = Command(call);
  if (reply->type == REDIS_REPLY_ERROR && Text(reply.get()).starts_with("NOSCRIPT")) {
    ++out.retries;
    LoadScript(algorithm);
    call[1] = script_shas_.at(algorithm);
    reply = Command(call);
  }
  ExpectType(reply.get(), REDIS_REPLY_ARRAY, "EVALSHA");
  if (reply->elements != 4) Fail("EVALSHA: not four numbers");
  for (size_t i = 0; i < 4; ++i) ExpectType(reply->element[i], REDIS_REPLY_INTEGER, "EVALSHA");
  out.reply = {.allowed = reply->element[0]->integer == 1,
               .remaining = reply->element[1]->integer,
               .retry_ms = reply->element[2]->integer,
               .reset_ms = reply->element[3]->integer};
  out.round_trips = round_trips_;
  return out;
}

}  // namespace sluice::baselines
