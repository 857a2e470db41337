#include "http/wire.h"

#include <charconv>
#include <string_view>

#include "http/string_views.h"

namespace sluice::http {

namespace bhttp = boost::beast::http;

namespace {

void AppendVersion(unsigned version, std::string& out) {
  out += "HTTP/";
  out += static_cast<char>('0' + version / 10);
  out += '.';
  out += static_cast<char>('0' + version % 10);
}

void AppendStartLine(const bhttp::request_header<Fields>& header, std::string& out) {
  out += StdView(header.method_string());
  out += ' ';
  out += StdView(header.target());
  out += ' ';
  AppendVersion(header.version(), out);
  out += "\r\n";
}

void AppendStartLine(const bhttp::response_header<Fields>& header, std::string& out) {
  AppendVersion(header.version(), out);
  char code[4] = {'0', '0', '0', ' '};
  const unsigned status = header.result_int() % 1000;
  code[0] = static_cast<char>('0' + status / 100);
  code[1] = static_cast<char>('0' + status / 10 % 10);
  code[2] = static_cast<char>('0' + status % 10);
  out += ' ';
  out.append(code, sizeof code);
  out += StdView(header.reason());
  out += "\r\n";
}

}  // namespace

template <bool IsRequest>
MessageBuffers SerializeMessage(
    const bhttp::message<IsRequest, bhttp::string_body, Fields>& message, std::string& head,
    bool with_body) {
  head.clear();
  AppendStartLine(message.base(), head);
  for (const auto& field : message.base()) {
    head += StdView(field.name_string());
    head += ": ";
    head += StdView(field.value());
    head += "\r\n";
  }
  head += "\r\n";
  if (!with_body) return {boost::asio::buffer(head), {}, {}};
  const std::string& body = message.body();
  std::string_view end;
  if (message.chunked()) {
    if (!body.empty()) {
      char size[16];
      const auto [last, ec] = std::to_chars(size, size + sizeof size, body.size(), 16);
      head.append(size, last);
      head += "\r\n";
    }
    end = body.empty() ? "0\r\n\r\n" : "\r\n0\r\n\r\n";
  }
  return {boost::asio::buffer(head), boost::asio::buffer(body),
          boost::asio::buffer(end.data(), end.size())};
}

template MessageBuffers SerializeMessage(const bhttp::message<true, bhttp::string_body, Fields>&,
                                         std::string&, bool);
template MessageBuffers SerializeMessage(const bhttp::message<false, bhttp::string_body, Fields>&,
                                         std::string&, bool);

}  // namespace sluice::http
