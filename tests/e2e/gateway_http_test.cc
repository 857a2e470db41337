// How `sluice serve` speaks HTTP as users' clients and upstreams do: hostile and malformed
// input, RFC 9112's rules for a proxy, kept-alive client connections, and the upstream pool.
// Real processes on loopback ports.

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "e2e/kept_alive_connection.h"
#include "e2e/processes.h"

namespace sluice {
namespace {

using e2e::GatewayProcess;
using e2e::Healthy;
using e2e::KeptAliveConnection;
using e2e::Upstream;
using e2e::WaitUntil;
using std::chrono::milliseconds;
using testing::Fetch;
using testing::HttpResult;
using testing::RawExchange;

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
