// A real redis-server for tests: started on a free loopback port, stopped on destruction.
#pragma once

#include <hiredis/hiredis.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "process.h"
#include "sluice/redis_store.h"
#include "stores/redis/reply.h"

namespace sluice::testing {

using redis::ReplyPtr;

// A blocking hiredis connection, for tests to look at and poke the server directly.
class RedisClient {
 public:
  explicit RedisClient(uint16_t port);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs one command; fails the test if the connection breaks.
  ReplyPtr Command(const std::vector<std::string>& args);
  // The reply as an integer (fails the test if it is not one).
  long long Integer(const std::vector<std::string>& args);
  // The reply as a string: status, bulk or error text; "" for nil.
  std::string String(const std::vector<std::string>& args);

 private:
  redisContext* context_;
};

// One redis-server process with no persistence, on 127.0.0.1 and a port of its own.
class RedisServer {
 public:
  // Starts the server; `extra_args` go on its command line ("--requirepass", "secret").
  explicit RedisServer(std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  uint16_t port() const { return port_; }
  bool running() const { return process_ != nullptr; }

  // Kills the server at once (SIGKILL), as a crash would; its data and scripts are gone.
  void Kill();
  // Starts it again on the same port.
  void Start();
  // Pauses (SIGSTOP) and resumes (SIGCONT) the process: a server that hangs.
  void Pause();
  void Resume();

  // Options for a RedisStore pointed at this server.
  RedisOptions Options() const;

  std::unique_ptr<RedisClient> Client() const { return std::make_unique<RedisClient>(port_); }

 private:
  std::vector<std::string> extra_args_;
  uint16_t port_;
  std::unique_ptr<Process> process_;
};

// A loopback TCP port that was free a moment ago.
uint16_t FreePort();

}  // namespace sluice::testing
