#include "http_client.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <thread>

#include <poll.h>

namespace sluice::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

HttpResult Fetch(uint16_t port, const std::string& method, const std::string& target,
                 const std::vector<std::pair<std::string, std::string>>& headers,
                 const std::string& body) {
  HttpResult result;
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.expires_after(std::chrono::seconds(10));
  stream.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return result;
  bhttp::request<bhttp::string_body> request{bhttp::string_to_verb(method), target, 11};
  request.set(bhttp::field::host, "127.0.0.1");
  for (const auto& [name, value] : headers) request.insert(name, value);
  request.body() = body;
  request.prepare_payload();
  bhttp::write(stream, request, ec);
  if (ec) return result;
  beast::flat_buffer buffer;
  bhttp::response<bhttp::string_body> response;
  bhttp::read(stream, buffer, response, ec);
  if (ec) return result;
  result.status = static_cast<int>(response.result_int());
  for (const auto& field : response) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    result.headers[name] = std::string(field.value());
  }
  result.body = response.body();
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return result;
}

namespace {

// Blocks until `socket` can be read (and, with `writing`, written), or `timeout` passes.
void AwaitSocket(tcp::socket& socket, bool writing, std::chrono::milliseconds timeout) {
  pollfd fd{socket.native_handle(), static_cast<short>(POLLIN | (writing ? POLLOUT : 0)), 0};
  ::poll(&fd, 1, static_cast<int>(timeout.count()));
}

// Appends what has arrived on `socket` to `received`; false once the server has closed it.
bool Drain(tcp::socket& socket, std::string& received) {
  char chunk[4096];
  beast::error_code ec;
  for (;;) {
    const size_t n = socket.read_some(asio::buffer(chunk), ec);
    if (ec == asio::error::would_block) return true;
    if (ec) return false;
    received.append(chunk, n);
  }
}

// How many of `size` bytes to write next, `sent` written: all that is left, or (for a client
// that pauses) up to `trickle_from`, then one at a time.
size_t NextStep(size_t sent, size_t size, std::chrono::milliseconds pause, size_t trickle_from) {
  const size_t step = pause.count() == 0    ? size - sent
                      : sent < trickle_from ? trickle_from - sent
                                            : 1;
  return std::min(step, size - sent);
}

}  // namespace

std::string RawExchange(uint16_t port, const std::string& bytes, std::chrono::milliseconds timeout,
                        std::chrono::milliseconds pause, size_t trickle_from) {
  asio::io_context io;
  tcp::socket socket(io);
  beast::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return "";
  socket.non_blocking(true);
  std::string received;
  for (size_t sent = 0; sent < bytes.size();) {
    const size_t n = socket.write_some(
        asio::buffer(bytes.data() + sent, NextStep(sent, bytes.size(), pause, trickle_from)), ec);
    if (ec == asio::error::would_block) {
      if (!Drain(socket, received)) return received;
      AwaitSocket(socket, true, timeout);
      continue;
    }
    if (ec) break;
    sent += n;
    if (!Drain(socket, received)) return received;
    // A slow client on purpose: the pause between bytes is what the test sends.
    if (pause.count() != 0 && sent >= trickle_from) std::this_thread::sleep_for(pause);
  }
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (Drain(socket, received)) {
    const auto left = give_up - std::chrono::steady_clock::now();
    if (left <= std::chrono::milliseconds(0)) break;
    AwaitSocket(socket, false, std::chrono::ceil<std::chrono::milliseconds>(left));
  }
  return received;
}

}  // namespace sluice::testing
