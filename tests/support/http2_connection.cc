#include "http2_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace sluice::testing {
namespace {

constexpr size_t kFrameHeaderBytes = 9;

void AppendBigEndian(std::string& out, uint64_t value, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t ReadBigEndian(const std::string& in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<uint8_t>(in[at + i]);
  return value;
}

// An HPACK integer with an N-bit prefix (RFC 7541 section 5.1), the prefix's other bits 0.
void AppendHpackInteger(std::string& out, size_t value, int prefix_bits) {
  const size_t max_prefix = (size_t{1} << prefix_bits) - 1;
  if (value < max_prefix) {
    out.push_back(static_cast<char>(value));
    return;
  }
  out.push_back(static_cast<char>(max_prefix));
  for (value -= max_prefix; value >= 128; value >>= 7) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
  }
  out.push_back(static_cast<char>(value));
}

// A header field as a literal without indexing, with a new name and neither string Huffman-coded
// (RFC 7541 section 6.2.2): no state shared with the server's decoder.
void AppendLiteralHeader(std::string& out, const std::string& name, const std::string& value) {
  out.push_back(0);
  AppendHpackInteger(out, name.size(), 7);
  out += name;
  AppendHpackInteger(out, value.size(), 7);
  out += value;
}

}  // namespace

uint32_t Http2Frame::Word(size_t at) const {
  if (payload.size() < at + 4) return 0;
  return static_cast<uint32_t>(ReadBigEndian(payload, at, 4)) & 0x7fffffffU;
}

Http2Connection::Http2Connection(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Http2Connection::~Http2Connection() {
  if (fd_ >= 0) ::close(fd_);
}

void Http2Connection::SendPreface() {
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  ::send(fd_, preface.data(), preface.size(), MSG_NOSIGNAL);
  Send({Http2Type::kSettings, 0, 0, ""});
}

bool Http2Connection::AcknowledgeSettings(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < give_up) {
    std::optional<Http2Frame> frame = Read(std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - std::chrono::steady_clock::now()));
    if (!frame) return false;
    if (frame->type == Http2Type::kSettings && (frame->flags & kHttp2Ack) == 0) {
      Send({Http2Type::kSettings, kHttp2Ack, 0, ""});
      return true;
    }
  }
  return false;
}

void Http2Connection::Send(const Http2Frame& frame) {
  std::string bytes;
  AppendBigEndian(bytes, frame.payload.size(), 3);
  bytes.push_back(static_cast<char>(frame.type));
  bytes.push_back(static_cast<char>(frame.flags));
  AppendBigEndian(bytes, frame.stream & 0x7fffffffU, 4);
  bytes += frame.payload;
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server has gone; Read says so
    sent += static_cast<size_t>(n);
  }
}

void Http2Connection::OpenGrpcStream(uint32_t stream, const std::string& path) {
  std::string block;
  AppendLiteralHeader(block, ":method", "POST");
  AppendLiteralHeader(block, ":scheme", "http");
  AppendLiteralHeader(block, ":path", path);
  AppendLiteralHeader(block, ":authority", "127.0.0.1");
  AppendLiteralHeader(block, "content-type", "application/grpc");
  AppendLiteralHeader(block, "te", "trailers");
  Send({Http2Type::kHeaders, kHttp2EndHeaders, stream, block});
}

void Http2Connection::SendPing(uint64_t opaque) {
  std::string payload;
  AppendBigEndian(payload, opaque, 8);
  Send({Http2Type::kPing, 0, 0, payload});
}

std::optional<Http2Frame> Http2Connection::Read(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (received_.size() >= kFrameHeaderBytes) {
      const size_t length = ReadBigEndian(received_, 0, 3);
      if (received_.size() >= kFrameHeaderBytes + length) {
        Http2Frame frame;
        frame.type = static_cast<Http2Type>(received_[3]);
        frame.flags = static_cast<uint8_t>(received_[4]);
        frame.stream = static_cast<uint32_t>(ReadBigEndian(received_, 5, 4)) & 0x7fffffffU;
        frame.payload = received_.substr(kFrameHeaderBytes, length);
        received_.erase(0, kFrameHeaderBytes + length);
        return frame;
      }
    }
    if (closed_ || fd_ < 0) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd readable{fd_, POLLIN, 0};
    const int ready = ::poll(&readable, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      closed_ = true;  // closed or reset by the server
      continue;
    }
    received_.append(chunk, static_cast<size_t>(n));
  }
}

}  // namespace sluice::testing
