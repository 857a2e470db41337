#include "http/wire.h"

#include <gtest/gtest.h>

#include <sstream>

namespace sluice::http {
namespace {

namespace bhttp = boost::beast::http;

// What the buffers hold, in order.
std::string Bytes(const MessageBuffers& buffers) {
  std::string out;
  for (const boost::asio::const_buffer& b : buffers) {
    out.append(static_cast<const char*>(b.data()), b.size());
  }
  return out;
}

// What Beast's own serializer writes for the same message.
template <bool IsRequest>
std::string BeastBytes(const bhttp::message<IsRequest, bhttp::string_body, Fields>& message) {
  std::ostringstream out;
  out << message;
  return out.str();
}

template <bool IsRequest>
void ExpectSameAsBeast(const bhttp::message<IsRequest, bhttp::string_body, Fields>& message) {
  std::string head = "left over from the message before";
  EXPECT_EQ(Bytes(SerializeMessage(message, head)), BeastBytes(message));
}

TEST(WireTest, RequestsAreWrittenAsBeastWritesThem) {
  bhttp::request<bhttp::string_body, Fields> get{bhttp::verb::get, "/api/x?a=1", 11};
  get.set(bhttp::field::host, "example.com");
  get.set("X-Api-Key", "ak_1");
  get.insert("X-Forwarded-For", "203.0.113.9");
  get.insert("x-forwarded-for", "10.0.0.1");  // repeated fields keep their order and spelling
  ExpectSameAsBeast(get);

  bhttp::request<bhttp::string_body, Fields> post{bhttp::verb::post, "/upload", 10};
  post.body() = std::string(70'000, 'b');
  post.prepare_payload();
  ExpectSameAsBeast(post);

  bhttp::request<bhttp::string_body, Fields> custom;
  custom.method_string("PURGE");
  custom.target("*");
  ExpectSameAsBeast(custom);
}

TEST(WireTest, ResponsesKeepTheirStatusAndReason) {
  bhttp::response<bhttp::string_body, Fields> ok{bhttp::status::ok, 11};
  ok.set(bhttp::field::content_type, "text/plain");
  ok.body() = "ok\n";
  ok.prepare_payload();
  ExpectSameAsBeast(ok);

  bhttp::response<bhttp::string_body, Fields> odd{bhttp::status::too_many_requests, 10};
  odd.reason("Slow Down");
  ExpectSameAsBeast(odd);

  bhttp::response<bhttp::string_body, Fields> unknown;
  unknown.result(599);
  unknown.reason("Whatever");
  ExpectSameAsBeast(unknown);

  // The answer to HEAD: a length that describes a body not sent.
  bhttp::response<bhttp::string_body, Fields> head_answer{bhttp::status::ok, 11};
  head_answer.content_length(1234);
  ExpectSameAsBeast(head_answer);
}

TEST(WireTest, AChunkedBodyGoesAsOneChunkAndTheLast) {
  bhttp::response<bhttp::string_body, Fields> chunked{bhttp::status::ok, 11};
  chunked.chunked(true);
  chunked.body() = std::string(300, 'x');
  std::string head;
  EXPECT_EQ(Bytes(SerializeMessage(chunked, head)),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n12c\r\n" + std::string(300, 'x') +
                "\r\n0\r\n\r\n");
  chunked.body().clear();
  EXPECT_EQ(Bytes(SerializeMessage(chunked, head)),
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
}

TEST(WireTest, WithoutItsBodyAMessageIsItsHeadAlone) {
  bhttp::response<bhttp::string_body, Fields> rejection{bhttp::status::too_many_requests, 11};
  rejection.body() = "{\"error\": \"too many requests\"}\n";
  rejection.prepare_payload();
  std::string head;
  EXPECT_EQ(Bytes(SerializeMessage(rejection, head, /*with_body=*/false)),
            "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 31\r\n\r\n");
}

TEST(WireTest, WriteNowWritesWhatTheSocketTakesAndLeavesTheRest) {
  boost::asio::io_context io;
  boost::asio::local::stream_protocol::socket writer(io);
  boost::asio::local::stream_protocol::socket reader(io);
  boost::asio::local::connect_pair(writer, reader);
  const std::string head = "head:";
  const std::string body = "body";
  MessageBuffers buffers = {boost::asio::buffer(head), boost::asio::buffer(body), {}};
  boost::system::error_code ec;
  // A blocking socket could block the thread: left to the asynchronous write.
  EXPECT_FALSE(WriteNow(writer, buffers, ec));
  EXPECT_EQ(boost::asio::buffer_size(buffers), head.size() + body.size());
  writer.non_blocking(true);
  EXPECT_TRUE(WriteNow(writer, buffers, ec));
  EXPECT_FALSE(ec);
  EXPECT_EQ(boost::asio::buffer_size(buffers), 0u);
  std::string got(head.size() + body.size(), '\0');
  boost::asio::read(reader, boost::asio::buffer(got));
  EXPECT_EQ(got, "head:body");
  // More than the socket's buffers hold: what went is consumed, the rest left in `buffers`.
  const std::string big(size_t{64} << 20, 'x');
  buffers = {boost::asio::buffer(head), boost::asio::buffer(big), {}};
  EXPECT_FALSE(WriteNow(writer, buffers, ec));
  EXPECT_FALSE(ec);
  const size_t left = boost::asio::buffer_size(buffers);
  EXPECT_GT(left, 0u);
  EXPECT_LT(left, big.size());
  EXPECT_EQ(static_cast<const char*>(buffers[1].data()) + buffers[1].size(),
            big.data() + big.size());
  // A closed peer: the error, and nothing left to do.
  reader.close();
  EXPECT_TRUE(WriteNow(writer, buffers, ec));
  EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace sluice::http
