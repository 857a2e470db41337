// The Redis store over a Unix socket against a real redis-server: two stores share the count
// exactly, and a server restarted on the same path is found again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "sluice/redis_store.h"
#include "support/apply_blocking.h"
#include "support/redis_server.h"

namespace sluice {
namespace {

using std::chrono::milliseconds;
using testing::ApplyBlocking;
using testing::RedisServer;

const Limit kHundredPerHour{100, 100, 3'600'000};

// A redis-server listening on a socket file of its own (beside its TCP port, for the test).
struct SocketServer {
  SocketServer()
      : path("/tmp/sluice-test-" + std::to_string(testing::FreePort()) + ".sock"),
        server({"--unixsocket", path, "--unixsocketperm", "700"}) {}

  RedisOptions Options() const {
    RedisOptions options;
    options.unix_path = path;
    options.reconnect_min = milliseconds(10);
    options.reconnect_max = milliseconds(100);
    return options;
  }

  std::string path;
  RedisServer server;
};

TEST(RedisUnixSocketTest, TwoStoresShareTheCountExactly) {
  SocketServer socket;
  RedisStore first(socket.Options());
  RedisStore second(socket.Options());
  ASSERT_TRUE(first.WaitReady(std::chrono::seconds(3))) << first.LastError();
  ASSERT_TRUE(second.WaitReady(std::chrono::seconds(3))) << second.LastError();
  RedisStore* stores[] = {&first, &second};
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  threads.reserve(20);
  for (int t = 0; t < 20; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        auto replies = ApplyBlocking(*stores[t % 2], {{"rl:key:shared", kHundredPerHour, 1}});
        if (replies.ok() && replies->front().allowed) admitted.fetch_add(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 100);
}

TEST(RedisUnixSocketTest, AServerRestartedOnTheSamePathIsFoundAgain) {
  SocketServer socket;
  RedisStore store(socket.Options());
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(3)));
  ASSERT_TRUE(ApplyBlocking(store, {{"rl:key:a", kHundredPerHour, 1}}).ok());
  socket.server.Kill();
  auto down = ApplyBlocking(store, {{"rl:key:a", kHundredPerHour, 1}});
  EXPECT_FALSE(down.ok());
  EXPECT_NE(store.LastError().find(socket.path), std::string::npos) << store.LastError();
  socket.server.Start();
  ASSERT_TRUE(store.WaitReady(std::chrono::seconds(5))) << store.LastError();
  auto replies = ApplyBlocking(store, {{"rl:key:a", kHundredPerHour, 1}});
  ASSERT_TRUE(replies.ok()) << replies.status().ToString();
  EXPECT_EQ(replies->front().remaining, 99);  // a new server: the bucket starts full
  EXPECT_EQ(store.Stats().connects, 2u);
}

}  // namespace
}  // namespace sluice
