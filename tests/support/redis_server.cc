#include "redis_server.h"
#include "support/wait_until.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace sluice::testing {

uint16_t FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("no free port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

RedisClient::RedisClient(uint16_t port) {
  timeval timeout{5, 0};
  context_ = redisConnectWithTimeout("127.0.0.1", port, timeout);
  if (context_ == nullptr || context_->err) {
    redisFree(context_);  // the destructor does not run when the constructor throws
    throw std::runtime_error("cannot connect to redis-server on port " + std::to_string(port));
  }
  redisSetTimeout(context_, timeout);
}

RedisClient::~RedisClient() { redisFree(context_); }

ReplyPtr RedisClient::Command(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(context_, static_cast<int>(args.size()), argv.data(), lens.data()));
  if (reply == nullptr)
    throw std::runtime_error("redis connection broke: " + std::string(context_->errstr));
  return ReplyPtr(reply);
}

long long RedisClient::Integer(const std::vector<std::string>& args) {
  ReplyPtr reply = Command(args);
  EXPECT_EQ(reply->type, REDIS_REPLY_INTEGER) << args.front();
  return reply->integer;
}

std::string RedisClient::String(const std::vector<std::string>& args) {
  ReplyPtr reply = Command(args);
  if (reply->type == REDIS_REPLY_NIL) return "";
  if (reply->str == nullptr) return std::to_string(reply->integer);
  return {reply->str, static_cast<size_t>(reply->len)};
}

RedisServer::RedisServer(std::vector<std::string> extra_args)
    : extra_args_(std::move(extra_args)), port_(FreePort()) {
  Start();
}

RedisServer::~RedisServer() = default;

void RedisServer::Start() {
  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   std::to_string(port_),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "no",
                                   "--loglevel",
                                   "warning",
                                   "--dir",
                                   "/tmp",
                                   "--logfile",
                                   "/tmp/sluice-test-redis-" + std::to_string(port_) + ".log"};
  args.insert(args.end(), extra_args_.begin(), extra_args_.end());
  process_ =
      std::make_unique<Process>(args, "/tmp/sluice-test-redis-" + std::to_string(port_) + ".out");
  const bool up = WaitUntil([&] {
    timeval timeout{0, 200'000};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeout);
    const bool connected = c != nullptr && c->err == 0;
    if (c != nullptr) redisFree(c);
    return connected;
  });
  if (up) return;
  throw std::runtime_error("redis-server did not start on port " + std::to_string(port_));
}

void RedisServer::Kill() { process_.reset(); }

void RedisServer::Pause() { process_->Signal(SIGSTOP); }
void RedisServer::Resume() { process_->Signal(SIGCONT); }

RedisOptions RedisServer::Options() const {
  RedisOptions options;
  options.host = "127.0.0.1";
  options.port = port_;
  options.timeout = std::chrono::milliseconds(500);
  options.reconnect_min = std::chrono::milliseconds(10);
  options.reconnect_max = std::chrono::milliseconds(200);
  return options;
}

}  // namespace sluice::testing
