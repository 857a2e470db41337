// A message held in memory, to the bytes of HTTP/1.1: its head written into a string the caller
// keeps from message to message, and its body sent from where it lies, in one gather write.
// Beast's serializer walks a generic buffer sequence a piece at a time, made for bodies that
// arrive in parts; for a whole message the same bytes cost a small part of that work.
#pragma once

#include <utility>  // before asio: Boost 1.74's coroutine support needs it first

#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>

namespace sluice::http {

// The buffers of one message, ready for one write: the head (with a chunk's size line when the
// message is chunked), the body, and the chunked framing's end. They point into the message and
// into the head string, which must outlive them.
using MessageBuffers = std::array<boost::asio::const_buffer, 3>;

// Writes `message`'s start line and fields into `head` (replacing what it held) and returns the
// buffers of the whole message. A chunked message's body goes as one chunk and the last chunk
// (without trailers); any other body goes as it is, framed by the Content-Length its fields say.
template <bool IsRequest>
MessageBuffers SerializeMessage(
    const boost::beast::http::message<IsRequest, boost::beast::http::string_body>& message,
    std::string& head);

// Writes `message` to `stream` (any Asio stream, such as Beast's basic_stream with its deadline)
// with any completion token; `head` must outlive the write.
template <class Stream, bool IsRequest, class CompletionToken>
auto AsyncWriteMessage(
    Stream& stream,
    const boost::beast::http::message<IsRequest, boost::beast::http::string_body>& message,
    std::string& head, CompletionToken&& token) {
  return boost::asio::async_write(stream, SerializeMessage(message, head),
                                  std::forward<CompletionToken>(token));
}

}  // namespace sluice::http
