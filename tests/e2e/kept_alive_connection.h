// One client connection to a gateway, kept alive across requests: tests that write a request
// in parts, or hold connections open.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdint>
#include <string_view>

namespace sluice::e2e {

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
    boost::beast::http::response_parser<boost::beast::http::string_body> parser;
    boost::beast::http::read(socket_, buffer_, parser, ec);
    return parser.release();
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace sluice::e2e
