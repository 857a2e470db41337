// The forwarding rules of the upstream pool: which headers go on and how bodies are framed.
#include "http/upstream.h"

#include <gtest/gtest.h>

namespace sluice::http {
namespace {

namespace bhttp = boost::beast::http;

std::vector<std::string> Names(const bhttp::fields& fields) {
  std::vector<std::string> names;
  for (const auto& f : fields) names.emplace_back(f.name_string());
  return names;
}

TEST(UpstreamTest, ARequestLosesItsHopByHopHeadersAndGainsXForwardedFor) {
  HttpRequest request{bhttp::verb::post, "/api/x", 11};
  request.set(bhttp::field::host, "example.com");
  request.insert(bhttp::field::connection, "keep-alive, X-Hop");
  request.insert(bhttp::field::connection, "x-other-hop, Host");
  request.set("X-Hop", "1");
  request.set("X-Other-Hop", "2");
  request.set("Keep-Alive", "timeout=5");
  request.set(bhttp::field::te, "trailers");
  request.set(bhttp::field::upgrade, "websocket");
  request.set(bhttp::field::proxy_connection, "keep-alive");
  request.set(bhttp::field::trailer, "X-Checksum");
  request.set(bhttp::field::transfer_encoding, "chunked");
  request.set(bhttp::field::expect, "100-continue");
  request.set("X-Forwarded-For", "198.51.100.1");
  request.set("X-Kept", "yes");
  request.body() = "hello";
  PrepareUpstreamRequest(request, Peer(boost::asio::ip::make_address("::ffff:203.0.113.9")),
                         "127.0.0.1:9000");
  EXPECT_EQ(Names(request.base()),
            (std::vector<std::string>{"Host", "X-Kept", "X-Forwarded-For", "Content-Length"}));
  EXPECT_EQ(request[bhttp::field::host], "example.com") << "a Connection option removed Host";
  EXPECT_EQ(request["X-Forwarded-For"], "198.51.100.1, 203.0.113.9");
  EXPECT_EQ(request[bhttp::field::content_length], "5");
  EXPECT_TRUE(request.keep_alive());
}

// HTTP/1.0 allows a request without Host; it goes upstream as HTTP/1.1, which does not.
TEST(UpstreamTest, ARequestWithoutHostGetsTheUpstreamsAuthority) {
  HttpRequest request{bhttp::verb::get, "/x", 10};
  PrepareUpstreamRequest(request, Peer(boost::asio::ip::make_address("203.0.113.9")), "[::1]:9000");
  EXPECT_EQ(request.version(), 11U);
  EXPECT_EQ(request[bhttp::field::host], "[::1]:9000");
}

TEST(UpstreamTest, AResponseLosesItsHopByHopHeadersAndIsFramedByLength) {
  HttpResponse response{bhttp::status::ok, 11};
  response.set(bhttp::field::connection, "close, X-Private");
  response.set("X-Private", "1");
  response.set(bhttp::field::transfer_encoding, "chunked");
  response.set(bhttp::field::content_type, "text/plain");
  response.body() = "abc";
  PrepareClientResponse(response, /*head=*/false);
  EXPECT_EQ(Names(response.base()), (std::vector<std::string>{"Content-Type", "Content-Length"}));
  EXPECT_EQ(response[bhttp::field::content_length], "3");
}

TEST(UpstreamTest, AnswersWithoutABodyKeepTheirFraming) {
  // To HEAD, and a 304: the length of a body not sent; a 204 has no length at all.
  for (const auto& [status, head] : {std::pair{200u, true}, std::pair{304u, false}}) {
    HttpResponse response;
    response.result(status);
    response.content_length(1234);
    PrepareClientResponse(response, head);
    EXPECT_EQ(response[bhttp::field::content_length], "1234") << status;
  }
  HttpResponse no_content{bhttp::status::no_content, 11};
  PrepareClientResponse(no_content, /*head=*/false);
  EXPECT_EQ(no_content.find(bhttp::field::content_length), no_content.end());
}

}  // namespace
}  // namespace sluice::http
