// A raw HTTP/2 client connection (cleartext, prior knowledge) for tests of clients that misbehave
// on purpose: streams opened and never sent on, pings too often, the server's pings never
// answered. Frames go out and come in as they are: nothing is answered or acknowledged unless
// the test sends it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace sluice::testing {

// Frame types, flags and codes of RFC 9113 that the tests use.
enum class Http2Type : uint8_t {
  kData = 0x0,
  kHeaders = 0x1,
  kSettings = 0x4,
  kPing = 0x6,
  kGoaway = 0x7,
};
inline constexpr uint8_t kHttp2Ack = 0x1;         // SETTINGS and PING
inline constexpr uint8_t kHttp2EndHeaders = 0x4;  // HEADERS
inline constexpr uint32_t kHttp2EnhanceYourCalm = 0xb;

struct Http2Frame {
  Http2Type type = Http2Type::kData;
  uint8_t flags = 0;
  uint32_t stream = 0;
  std::string payload;

  // The four bytes of the payload from `at` as a number, its top bit dropped: GOAWAY's last
  // stream id (at 0) and error code (at 4).
  uint32_t Word(size_t at = 0) const;
};

class Http2Connection {
 public:
  // Connects to 127.0.0.1:`port`; connected() says whether it did.
  explicit Http2Connection(uint16_t port);
  ~Http2Connection();
  Http2Connection(const Http2Connection&) = delete;
  Http2Connection& operator=(const Http2Connection&) = delete;

  bool connected() const { return fd_ >= 0; }

  // The client's connection preface and an empty SETTINGS frame.
  void SendPreface();
  // Reads until the server's SETTINGS frame and acknowledges it, so that the limits it sets are
  // in force (a server enforces the settings its peer has acknowledged). False if none came.
  bool AcknowledgeSettings(std::chrono::milliseconds timeout);
  void Send(const Http2Frame& frame);
  // HEADERS (END_HEADERS, not END_STREAM) that open a gRPC call of `path` on `stream`, an odd
  // number above the last: the call's message never follows unless the test sends it.
  void OpenGrpcStream(uint32_t stream, const std::string& path);
  void SendPing(uint64_t opaque);

  // The next frame, or none when none came within `timeout` or the connection ended (closed()
  // then says so).
  std::optional<Http2Frame> Read(std::chrono::milliseconds timeout);
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  std::string received_;
  bool closed_ = false;
};

}  // namespace sluice::testing
