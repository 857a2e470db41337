// `sluice serve` as users run it: real processes (gateways, the demo upstream, redis-server) on
// loopback ports, driven over HTTP.
#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "e2e/processes.h"
#include "support/redis_cluster.h"

namespace sluice {
namespace {

using e2e::CheckConfig;
using e2e::GatewayProcess;
using e2e::Healthy;
using e2e::Reloads;
using e2e::Upstream;
using e2e::WaitUntil;
using std::chrono::milliseconds;
using testing::Fetch;
using testing::HttpResult;
using testing::RawExchange;
using testing::RedisCluster;
using testing::RedisServer;

std::string RedisStore(const RedisServer& redis, const std::string& failure = "open") {
  return "store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis.port()) +
         "', timeout: 200ms}\nfailure: " + failure + "\n";
}

// One client connection kept alive across requests, written to byte by byte if need be.
class KeptAliveConnection {
 public:
  explicit KeptAliveConnection(uint16_t port) : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }

  // Writes `bytes` (a whole request, or part of one); false when the write failed.
  bool Write(std::string_view bytes) {
    boost::beast::error_code ec;
    boost::asio::write(socket_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }

  // Reads the next response; an error leaves `ec` set.
  boost::beast::http::response<boost::beast::http::string_body> Read(boost::beast::error_code& ec) {
    boost::beast::http::response<boost::beast::http::string_body> response;
    boost::beast::http::read(socket_, buffer_, response, ec);
    return response;
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

// An upstream that answers 200 to every request and closes a connection once it has been idle
// for `idle`, as a server with a short keep-alive timeout does (Node's is 5 s), after writing
// `farewell` on it (some send a 408). It counts the connections the gateway closed first.
class ClosingUpstream {
 public:
  ClosingUpstream(milliseconds idle, std::string farewell)
      : idle_(idle),
        farewell_(std::move(farewell)),
        acceptor_(io_,
                  boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)),
        accepting_([this] { Accept(); }) {}
  ~ClosingUpstream() {
    stopping_ = true;
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);  // ends the blocking accept
    accepting_.join();
    for (std::thread& t : serving_) t.join();
  }
  ClosingUpstream(const ClosingUpstream&) = delete;
  ClosingUpstream& operator=(const ClosingUpstream&) = delete;

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  size_t ClosedByTheGateway() const { return closed_by_the_gateway_.load(); }
  // Connections accepted, and those it closed for being idle.
  size_t Accepted() const { return accepted_.load(); }
  size_t ClosedByTheUpstream() const { return closed_by_the_upstream_.load(); }
  // Whether every connection accepted so far has been closed for being idle.
  bool ClosedEveryIdleConnection() const {
    return Accepted() > 0 && ClosedByTheUpstream() == Accepted();
  }

 private:
  void Accept() {
    while (!stopping_) {
      boost::asio::ip::tcp::socket socket(io_);
      boost::system::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec) return;
      ++accepted_;
      serving_.emplace_back([this, s = std::move(socket)]() mutable { Serve(s); });
    }
  }

  void Serve(boost::asio::ip::tcp::socket& socket) const {
    namespace bhttp = boost::beast::http;
    boost::beast::flat_buffer buffer;
    while (!stopping_) {
      pollfd readable{socket.native_handle(), POLLIN, 0};
      if (buffer.size() == 0 && ::poll(&readable, 1, static_cast<int>(idle_.count())) <= 0) {
        boost::system::error_code ignored;
        boost::asio::write(socket, boost::asio::buffer(farewell_), ignored);
        socket.close(ignored);
        ++closed_by_the_upstream_;
        return;  // idle too long: the socket closes
      }
      bhttp::request<bhttp::string_body> request;
      boost::system::error_code ec;
      bhttp::read(socket, buffer, request, ec);
      if (ec == bhttp::error::end_of_stream) ++closed_by_the_gateway_;
      if (ec) return;
      bhttp::response<bhttp::string_body> response{bhttp::status::ok, 11};
      response.body() = "ok";
      response.prepare_payload();
      bhttp::write(socket, response, ec);
      if (ec) return;
    }
  }

  const milliseconds idle_;
  const std::string farewell_;
  std::atomic<bool> stopping_{false};
  mutable std::atomic<size_t> closed_by_the_gateway_{0};
  mutable std::atomic<size_t> closed_by_the_upstream_{0};
  std::atomic<size_t> accepted_{0};
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::vector<std::thread> serving_;
  std::thread accepting_;
};

TEST(GatewayE2eTest, ThreeGatewaysOneRedisAdmitExactlyTheLimit) {
  RedisServer redis;
  Upstream upstream;
  const std::string config =
      RedisStore(redis) + "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h}\n";
  std::vector<std::unique_ptr<GatewayProcess>> gateways;
  for (int i = 0; i < 3; ++i)
    gateways.push_back(std::make_unique<GatewayProcess>(upstream.port(), config));
  int ok = 0, limited = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    HttpResult r = gateways[i % 3]->Get("/api/orders", {{"X-Api-Key", "ak_abc123"}});
    if (r.status == 200) {
      ++ok;
    } else if (r.status == 429) {
      ++limited;
      // One token every 36 s, less what has come back since the first request (a slow run, as
      // under a sanitizer, takes seconds).
      const auto since_start = std::chrono::duration_cast<std::chrono::seconds>(
          std::chrono::steady_clock::now() - start);
      EXPECT_LE(std::stoi(r.Header("retry-after")), 36);
      EXPECT_GE(std::stoi(r.Header("retry-after")), 36 - since_start.count() - 1);
      EXPECT_EQ(r.Header("x-ratelimit-remaining"), "0");
      EXPECT_EQ(r.Header("ratelimit-policy"), "\"per-key\";q=100;w=3600");
      EXPECT_NE(r.body.find("\"rule\":\"per-key\""), std::string::npos);
    }
  }
  EXPECT_EQ(ok, 100);
  EXPECT_EQ(limited, 100);
}

// The same over a Redis Cluster, with three rules whose buckets live on different shards.
TEST(GatewayE2eTest, TwoGatewaysOneClusterAdmitExactlyTheLimit) {
  RedisCluster cluster(3, 0);
  Upstream upstream;
  std::string config = "store: {type: cluster, timeout: 200ms, nodes: [127.0.0.1:" +
                       std::to_string(cluster.ports()[0]) + "]}\n" +
                       "client: {tenant_header: X-Tenant-Id}\n"
                       "rules:\n"
                       "  - {name: per-ip, key: ip, capacity: 1000, period: 1h}\n"
                       "  - {name: per-key, key: key, capacity: 100, period: 1h}\n"
                       "  - {name: per-tenant, key: tenant, capacity: 1000, period: 1h}\n";
  GatewayProcess a(upstream.port(), config);
  GatewayProcess b(upstream.port(), config);
  int ok = 0;
  for (int i = 0; i < 150; ++i) {
    HttpResult r =
        (i % 2 == 0 ? a : b).Get("/", {{"X-Api-Key", "ak_abc123"}, {"X-Tenant-Id", "org_acme"}});
    if (r.status == 200) ++ok;
    if (i >= 100) {
      EXPECT_EQ(r.status, 429);
      EXPECT_NE(r.body.find("\"rule\":\"per-key\""), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(ok, 100);
}

// Two gateways leasing tokens from one bucket: never more than the limit between them, far
// fewer calls to Redis than requests, and what they hold goes back to Redis when they stop.
TEST(GatewayE2eTest, TwoGatewaysLeasingFromOneRedisNeverExceedTheLimit) {
  RedisServer redis;
  Upstream upstream;
  const std::string config = RedisStore(redis) +
                             "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h, "
                             "counting: leased, lease: {max_fraction: 0.2, ttl: 1h}}\n";
  GatewayProcess a(upstream.port(), config);
  GatewayProcess b(upstream.port(), config);
  int ok = 0;
  for (int i = 0; i < 160; ++i) {
    HttpResult r = (i % 2 == 0 ? a : b).Get("/", {{"X-Api-Key", "ak_lease"}});
    if (r.status == 200) ++ok;
  }
  EXPECT_LE(ok, 100);
  EXPECT_GE(ok, 60);
  const std::string stats = redis.Client()->String({"INFO", "commandstats"});
  const size_t at = stats.find("cmdstat_evalsha:calls=");
  ASSERT_NE(at, std::string::npos);
  EXPECT_LT(std::stol(stats.substr(at + 22)), 40) << "leases, not a call a request";
  const std::string metrics = Fetch(a.admin(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("sluice_local_decisions_total"), std::string::npos) << metrics;

  for (GatewayProcess* g : {&a, &b}) {
    g->process().Signal(SIGTERM);
    EXPECT_EQ(g->process().Wait(milliseconds(5000)), 0);
  }
  const std::string tokens = redis.Client()->String({"HGET", "rl:key:ak_lease", "tokens"});
  EXPECT_EQ(std::stoi(tokens), 100 - ok) << "every token leased and not spent goes back";
}

// A gateway counting locally sends what it counted when it stops, and stops cleanly (the sanitizer
// build also holds it to leaving nothing allocated behind).
TEST(GatewayE2eTest, ASyncedGatewaySendsItsCountsWhenItStops) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         RedisStore(redis) +
                             "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h, "
                             "counting: synced, sync_interval: 1h}\n");
  EXPECT_NE(CheckConfig(gateway.ConfigPath()).find(": ok ("), std::string::npos)
      << "check-config accepts what serve runs";
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "ak_synced"}}).status, 200);
  }
  gateway.process().Signal(SIGTERM);
  EXPECT_EQ(gateway.process().Wait(milliseconds(5000)), 0);
  const std::string tokens = redis.Client()->String({"HGET", "rl:key:ak_synced", "tokens"});
  EXPECT_EQ(std::stoi(tokens), 90) << "the 10 admitted reached Redis";
}

// Once Redis has said no for a key, the gateway answers that key's next requests itself until
// the retry time: Redis sees no further call.
TEST(GatewayE2eTest, OverLimitCacheSparesTheStore) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), RedisStore(redis) +
                                              "over_limit_cache: {max_keys: 1000}\n" +
                                              "rules:\n  - {name: per-key, key: key, capacity: 2, "
                                              "period: 1h}\n");
  auto calls = [&] {
    const std::string stats = redis.Client()->String({"INFO", "commandstats"});
    const size_t at = stats.find("cmdstat_evalsha:calls=");
    return at == std::string::npos ? 0 : std::stol(stats.substr(at + 22));
  };
  for (int i = 0; i < 3; ++i) gateway.Get("/", {{"X-Api-Key", "hot"}});
  const long before = calls();
  for (int i = 0; i < 20; ++i) {
    HttpResult r = gateway.Get("/", {{"X-Api-Key", "hot"}});
    EXPECT_EQ(r.status, 429);
    // Half an hour for a token, rounded up: the script's doubles make 1 / (2 / 3,600,000 ms) a
    // hair over 1,800,000 when the bucket was emptied in the same millisecond, hence 1801.
    EXPECT_TRUE(r.Header("retry-after") == "1800" || r.Header("retry-after") == "1801")
        << r.Header("retry-after");
  }
  EXPECT_EQ(calls(), before) << "rejections from the cache must not reach Redis";
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "cold"}}).status, 200);
  EXPECT_EQ(calls(), before + 1);
  const std::string metrics = Fetch(gateway.admin(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("sluice_over_limit_cache_rejections_total 20"), std::string::npos)
      << metrics;
}

// Which client the rules count, trusted proxies or not, is tested in-process
// (tests/http/gateway_check_api_test.cc); here, what the upstream is told.
TEST(GatewayE2eTest, TheUpstreamSeesTheForwardedChainWithThePeerAppended) {
  Upstream upstream;
  GatewayProcess trusted(upstream.port(),
                         "client: {trusted_proxies: [127.0.0.1/32]}\n"
                         "rules:\n  - {name: per-ip, key: ip, capacity: 1, period: 1h}\n");
  HttpResult r = trusted.Get("/", {{"X-Forwarded-For", "198.51.100.3"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("x-seen-forwarded-for"), "198.51.100.3, 127.0.0.1");
}

TEST(GatewayE2eTest, FailurePolicyWhileRedisIsDownAndRecovery) {
  RedisServer redis;
  Upstream upstream;
  const std::string rules = "rules:\n  - {name: per-key, key: key, capacity: 100, period: 1h}\n";
  GatewayProcess open(upstream.port(), RedisStore(redis, "open") + rules);
  GatewayProcess closed(upstream.port(), RedisStore(redis, "closed") + rules);
  EXPECT_EQ(open.Get("/", {{"X-Api-Key", "k"}}).status, 200);
  EXPECT_EQ(Fetch(open.admin(), "GET", "/readyz").status, 200);
  redis.Kill();
  EXPECT_EQ(open.Get("/", {{"X-Api-Key", "k"}}).status, 200);
  EXPECT_EQ(closed.Get("/", {{"X-Api-Key", "k"}}).status, 503);
  EXPECT_TRUE(WaitUntil([&] { return Fetch(open.admin(), "GET", "/readyz").status == 503; },
                        milliseconds(3000)));
  redis.Start();
  EXPECT_TRUE(WaitUntil(
      [&] {
        return closed.Get("/", {{"X-Api-Key", "k"}}).status == 200;
      },
      milliseconds(5000)));
  const std::string metrics = Fetch(closed.admin(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("sluice_failure_policy_total{decision=\"rejected\"}"), std::string::npos);
}

TEST(GatewayE2eTest, SighupReloadsAGoodFileAndKeepsTheOldOneOnABadFile) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         "rules:\n  - {name: per-key, key: key, capacity: 1, period: 1h}\n");
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "a"}}).status, 200);
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "a"}}).status, 429);
  gateway.Write(upstream.port(),
                "rules:\n  - {name: per-key, key: key, capacity: 5, period: 1h}\n");
  gateway.process().Signal(SIGHUP);
  // Bucket "a" keeps its state (empty); a new key sees the new capacity.
  EXPECT_TRUE(WaitUntil(
      [&] {
        return gateway.Get("/", {{"X-Api-Key", "c"}}).Header("x-ratelimit-limit") == "5";
      },
      milliseconds(3000)));
  gateway.Write(upstream.port(),
                "rules:\n  - {name: per-key, key: key, capacity: 0, period: 1h}\n");
  gateway.process().Signal(SIGHUP);
  // The refusal is counted before the old configuration is asserted, so that a reload that never
  // ran cannot pass for one refused.
  ASSERT_TRUE(
      WaitUntil([&] { return Reloads(gateway.admin(), "failure") == 1; }, milliseconds(5000)));
  EXPECT_TRUE(Healthy(gateway.admin()));
  // The old limit of 5 is still in force.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "b"}}).status, 200);
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "b"}}).status, 429);
  // A valid file that changes what the running servers were built with is refused whole.
  gateway.Write(upstream.port(),
                "max_body_bytes: 100\n"
                "rules:\n  - {name: per-key, key: key, capacity: 7, period: 1h}\n");
  gateway.process().Signal(SIGHUP);
  ASSERT_TRUE(
      WaitUntil([&] { return Reloads(gateway.admin(), "failure") == 2; }, milliseconds(5000)));
  EXPECT_NE(gateway.Log().find("reload refused: max_body_bytes needs a restart"),
            std::string::npos);
  EXPECT_EQ(gateway.Get("/", {{"X-Api-Key", "d"}}).Header("x-ratelimit-limit"), "5");
}

// The requests (and rate limit service calls) that the gateway with admin port `admin` is
// handling now.
double InFlight(uint16_t admin) {
  return e2e::MetricValue(Fetch(admin, "GET", "/metrics").body, "sluice_requests_in_flight");
}

TEST(GatewayE2eTest, SigtermDrainsRequestsInFlight) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "rules: []\n");
  auto slow = std::async(std::launch::async, [&] { return gateway.Get("/slow?ms=500"); });
  ASSERT_TRUE(WaitUntil([&] { return InFlight(gateway.admin()) >= 1; }, milliseconds(3000)));
  gateway.process().Signal(SIGTERM);
  HttpResult r = slow.get();
  EXPECT_EQ(r.status, 200) << "a request in flight was cut off";
  EXPECT_EQ(gateway.process().Wait(milliseconds(3000)), 0);
}

// A request whose head completes once the drain is over (here while the gateway waits, for up to
// a second, to send its local counts to a Redis that hangs) is refused with 503, not handled: the
// loops could stop before it ended, after the upstream had it.
TEST(GatewayE2eTest, ARequestBegunAfterTheDrainIsRefused) {
  RedisServer redis;
  Upstream upstream;
  GatewayProcess gateway(
      upstream.port(),
      "store: {type: redis, url: 'redis://127.0.0.1:" + std::to_string(redis.port()) +
          "', timeout: 5s}\nrules:\n  - {name: per-key, key: key, capacity: 100, "
          "period: 1h, counting: synced, sync_interval: 1h}\n");
  ASSERT_TRUE(WaitUntil([&] { return Fetch(gateway.admin(), "GET", "/readyz").status == 200; },
                        milliseconds(5000)))
      << "connected to Redis before it hangs";
  // A bucket's first use learns its tokens from Redis; the request after it is a count to send.
  ASSERT_EQ(gateway.Get("/", {{"X-Api-Key", "ak_late"}}).status, 200);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return !redis.Client()->String({"HGET", "rl:key:ak_late", "tokens"}).empty();
      },
      milliseconds(5000)));
  ASSERT_EQ(gateway.Get("/", {{"X-Api-Key", "ak_late"}}).status, 200);
  KeptAliveConnection connection(gateway.proxy());
  boost::beast::error_code ec;
  // A request of its own first (no key, so no count): the connection is the gateway's, kept
  // alive, before the drain.
  ASSERT_TRUE(connection.Write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  ASSERT_EQ(connection.Read(ec).result_int(), 200) << ec.message();
  // All of the next head but its last byte, which comes once the drain is over: the gateway
  // then waits, for up to a second, to send its count to a Redis that hangs.
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\nX-Api-Key: ak_late\r\n\r\n";
  ASSERT_TRUE(connection.Write(std::string_view(head).substr(0, head.size() - 1)));
  redis.Pause();
  gateway.process().Signal(SIGTERM);
  ASSERT_TRUE(WaitUntil([&] { return gateway.Log().find("stopping") != std::string::npos; },
                        milliseconds(3000)));
  ASSERT_TRUE(WaitUntil([&] { return gateway.Log().find("listeners closed") != std::string::npos; },
                        milliseconds(3000)))
      << "the drain never found nothing in flight";
  ASSERT_TRUE(connection.Write(std::string_view(head).substr(head.size() - 1)));
  const auto refused = connection.Read(ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(refused.result_int(), 503) << refused;
  EXPECT_FALSE(refused.keep_alive());
  redis.Resume();  // before the flush gives up: the count goes, and the gateway exits
  EXPECT_EQ(gateway.process().Wait(milliseconds(3000)), 0);
}

TEST(GatewayE2eTest, BadInputGetsAnAnswerAndOthersAreServedMeanwhile) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         "max_body_bytes: 1024\nmax_header_bytes: 2048\nheader_timeout: 1s\n"
                         "rules:\n  - {name: per-ip, key: ip, capacity: 100000, period: 1s}\n");
  const uint16_t port = gateway.proxy();
  const milliseconds wait(3000);
  EXPECT_TRUE(RawExchange(port, "NOT HTTP AT ALL\r\n\r\n", wait).starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(
      RawExchange(
          port, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(4000, 'a') + "\r\n\r\n", wait)
          .starts_with("HTTP/1.1 431"));
  EXPECT_TRUE(RawExchange(port,
                          "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n",
                          wait)
                  .starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(RawExchange(port,
                          "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" +
                              std::string(5000, 'b'),
                          wait)
                  .starts_with("HTTP/1.1 413"));
  // A client that sends its headers a byte at a time is cut off, while others are served.
  auto slowloris = std::async(std::launch::async, [&] {
    return RawExchange(port, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaa\r\n\r\n", wait,
                       milliseconds(200));
  });
  EXPECT_EQ(gateway.Get("/").status, 200);
  // Its connection is closed once the header timeout passes (a timed-out socket cannot answer).
  const auto slow_start = std::chrono::steady_clock::now();
  EXPECT_EQ(slowloris.get(), "");
  EXPECT_LT(std::chrono::steady_clock::now() - slow_start, milliseconds(2500));
  HttpResult hung = gateway.Get("/slow?ms=3000");
  EXPECT_EQ(hung.status, 504) << hung.body;
  upstream.Stop();
  EXPECT_EQ(gateway.Get("/").status, 502);
  EXPECT_TRUE(Healthy(gateway.admin()));
}

// RFC 9112 3.2 of a proxy: Host required once and valid in HTTP/1.1, an absolute-form target
// made origin-form with its authority as Host, an HTTP/1.0 request without Host given one, and
// obsolete line folding replaced by a space; what reaches the upstream is one valid request.
TEST(GatewayE2eTest, HostAndTargetAreAsRfc9112AsksOfAProxy) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "rules: []\n");
  const milliseconds wait(3000);
  auto exchange = [&](const std::string& head) {
    return RawExchange(gateway.proxy(), head + "\r\n", wait);
  };
  auto seen = [](const std::string& answer, const std::string& header) {
    const size_t at = answer.find(header + ": ");
    if (at == std::string::npos) return std::string("(none)");
    const size_t from = at + header.size() + 2;
    return answer.substr(from, answer.find("\r\n", from) - from);
  };
  EXPECT_TRUE(exchange("GET / HTTP/1.1\r\n").starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(exchange("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n").starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(exchange("GET / HTTP/1.1\r\nHost: a b\r\n").starts_with("HTTP/1.1 400"));
  EXPECT_TRUE(exchange("GET ftp://a/x HTTP/1.1\r\nHost: a\r\n").starts_with("HTTP/1.1 400"));
  const std::string absolute =
      exchange("GET http://other.example:81/x?q=1 HTTP/1.1\r\nHost: a.example\r\n");
  ASSERT_TRUE(absolute.starts_with("HTTP/1.1 200")) << absolute;
  EXPECT_EQ(seen(absolute, "X-Seen-Target"), "/x?q=1");
  EXPECT_EQ(seen(absolute, "X-Seen-Host"), "other.example:81");
  const std::string old = exchange("GET /y HTTP/1.0\r\n");
  ASSERT_TRUE(old.starts_with("HTTP/1.0 200")) << old;
  EXPECT_EQ(seen(old, "X-Seen-Host"), "127.0.0.1:" + std::to_string(upstream.port()));
  const std::string folded = exchange("GET / HTTP/1.1\r\nHost: a\r\nX-Hop: b\r\n c\r\n");
  ASSERT_TRUE(folded.starts_with("HTTP/1.1 200")) << folded;
  EXPECT_EQ(seen(folded, "X-Seen-Hop"), "b c");
}

TEST(GatewayE2eTest, AKeptAliveConnectionsNextHeadSentAByteAtATimeIsCutOff) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "header_timeout: 1s\nrules: []\n");
  const std::string first = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  const std::string next = "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaa\r\n\r\n";
  // The first request at once, then the next head a byte each 200 ms: 10 s in all, were it let.
  const auto start = std::chrono::steady_clock::now();
  const std::string answer = RawExchange(gateway.proxy(), first + next, milliseconds(3000),
                                         milliseconds(200), first.size());
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 200")) << answer;
  EXPECT_EQ(answer.find("HTTP/1.1", 1), std::string::npos) << "the slow head was answered";
  // The header timeout (1.2 s in), not the minute a kept-alive connection may idle, cut it off.
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(5000));
}

// Past max_connections a new connection is closed unanswered; once one closes, the next is served.
TEST(GatewayE2eTest, ConnectionsPastTheLimitAreClosedUntilOneEnds) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "max_connections: 3\nrules: []\n");
  const std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  std::vector<std::unique_ptr<KeptAliveConnection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<KeptAliveConnection>(gateway.proxy()));
    boost::beast::error_code ec;
    ASSERT_TRUE(held.back()->Write(request));
    EXPECT_EQ(held.back()->Read(ec).result_int(), 200)
        << "connection " << i << ": " << ec.message();
  }
  KeptAliveConnection over(gateway.proxy());
  over.Write(request);
  boost::beast::error_code ec;
  over.Read(ec);
  EXPECT_TRUE(ec) << "the fourth connection was answered";
  held.pop_back();
  EXPECT_TRUE(WaitUntil(
      [&] {
        KeptAliveConnection next(gateway.proxy());
        boost::beast::error_code error;
        return next.Write(request) && next.Read(error).result_int() == 200 && !error;
      },
      milliseconds(3000)))
      << "no connection served after one of the three closed";
}

TEST(GatewayE2eTest, AKeptAliveConnectionMayBeQuietLongerThanTheHeaderTimeout) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "header_timeout: 1s\nrules: []\n");
  KeptAliveConnection connection(gateway.proxy());
  for (int i = 0; i < 2; ++i) {
    // Quiet past the header timeout, in real time: what must not happen (a close) has no
    // moment to poll for.
    if (i == 1) std::this_thread::sleep_for(milliseconds(1500));
    boost::beast::error_code ec;
    ASSERT_TRUE(connection.Write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) << "request " << i;
    const auto response = connection.Read(ec);
    ASSERT_FALSE(ec) << "request " << i << ": " << ec.message();
    EXPECT_EQ(response.result_int(), 200);
  }
}

TEST(GatewayE2eTest, AClientStillSendingARefusedBodyGetsItsAnswer) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "max_body_bytes: 1024\nrules: []\n");
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.open(asio::ip::tcp::v4());
  // Small, so that the upload cannot fit in the socket buffers before the gateway's answer.
  socket.set_option(asio::socket_base::send_buffer_size(64 * 1024));
  socket.connect({asio::ip::make_address("127.0.0.1"), gateway.proxy()});
  // The whole upload before any read, as simple clients do: the 413 is sent after the head, and
  // a connection closed on the rest of the body would reset under the client's writes. (Neither
  // call can hang: the gateway closes the connection 2 s after its answer at the latest.)
  const std::string body(4 << 20, 'b');
  const std::string request =
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
      body;
  boost::beast::error_code ec;
  asio::write(socket, asio::buffer(request), ec);
  EXPECT_FALSE(ec) << "the upload was cut off: " << ec.message();
  std::string answer;
  asio::read(socket, asio::dynamic_buffer(answer), ec);
  EXPECT_EQ(ec, asio::error::eof) << ec.message();
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << answer;
}

TEST(GatewayE2eTest, TheClientsTimeoutsDoNotRunWhileTheUpstreamAnswers) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "header_timeout: 300ms\nrules: []\n");
  // The request arrives at once; the header timeout bounds its arrival, not the answer's (which
  // the upstream's 1 s timeout bounds).
  HttpResult slow = gateway.Get("/slow?ms=600");
  EXPECT_EQ(slow.status, 200) << slow.body;
}

TEST(GatewayE2eTest, AHeadRequestGetsNoBodyWhoeverAnswers) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(),
                         "rules:\n  - {name: per-ip, key: ip, capacity: 1, period: 1h}\n");
  const std::string head = "HEAD /api/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  // Answered by the upstream, then by the gateway's own rejection: each ends with its head.
  for (const char* status : {"HTTP/1.1 200", "HTTP/1.1 429"}) {
    const std::string answer = RawExchange(gateway.proxy(), head, milliseconds(3000));
    EXPECT_TRUE(answer.starts_with(status)) << answer;
    EXPECT_TRUE(answer.ends_with("\r\n\r\n")) << answer;
    EXPECT_NE(answer.find("Content-Length: "), std::string::npos) << answer;
  }
}

TEST(GatewayE2eTest, ARequestThatCannotGoTwiceGoesOnAConnectionTheUpstreamHasNotClosed) {
  ClosingUpstream upstream(milliseconds(300), "");
  GatewayProcess gateway(upstream.port(), "rules: []\n");
  // Each event loop keeps a connection to the upstream, which then closes them.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(gateway.Get("/warm").status, 200);
  ASSERT_TRUE(WaitUntil([&] { return upstream.ClosedEveryIdleConnection(); }, milliseconds(3000)));
  // A POST cannot be retried on a new connection after failing on a dead one, so it must not
  // be sent on one.
  for (int i = 0; i < 4; ++i) {
    HttpResult r = Fetch(gateway.proxy(), "POST", "/api/x", {}, "payload");
    EXPECT_EQ(r.status, 200) << r.body;
  }
}

TEST(GatewayE2eTest, AnUpstreamsLastWordsOnAnIdleConnectionAnswerNoRequest) {
  ClosingUpstream upstream(milliseconds(300),
                           "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n");
  GatewayProcess gateway(upstream.port(), "rules: []\n");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(gateway.Get("/warm").status, 200);
  ASSERT_TRUE(WaitUntil([&] { return upstream.ClosedEveryIdleConnection(); }, milliseconds(3000)));
  // Past the pool's quiet time of 1 s, which the gateway's own clock measures in its own
  // process: no test clock or poll reaches it.
  std::this_thread::sleep_for(milliseconds(1000));
  for (int i = 0; i < 4; ++i) {
    HttpResult r = gateway.Get("/api/x");
    EXPECT_EQ(r.status, 200) << "the upstream's parting 408 was taken for the answer";
  }
}

TEST(GatewayE2eTest, APooledConnectionIdleForTheIdleTimeoutIsClosed) {
  ClosingUpstream upstream(milliseconds(60'000), "");  // never the first to close here
  GatewayProcess gateway(upstream.port(), "rules: []\n", ", idle_timeout: 1s");
  EXPECT_EQ(gateway.Get("/").status, 200);
  EXPECT_EQ(upstream.ClosedByTheGateway(), 0u) << "the connection was not kept for reuse";
  EXPECT_TRUE(WaitUntil([&] { return upstream.ClosedByTheGateway() == 1; }, milliseconds(3000)));
}

TEST(GatewayE2eTest, ExpectContinueIsAnsweredAndNotPassedOn) {
  Upstream upstream;
  GatewayProcess gateway(upstream.port(), "rules: []\n");
  const std::string answer =
      RawExchange(gateway.proxy(),
                  "POST /api/x HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n"
                  "Connection: close\r\n\r\nhello",
                  milliseconds(3000));
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK")) << answer;
  EXPECT_NE(answer.find("\"bytes\":5"), std::string::npos) << answer;
}

}  // namespace
}  // namespace sluice
