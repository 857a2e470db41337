// A message held in memory, to the bytes of HTTP/1.1: its head written into a string the caller
// keeps from message to message, and its body sent from where it lies, in one write of several
// buffers. Beast's serializer walks a generic buffer sequence a piece at a time, made for bodies
// that arrive in parts; for a whole message the same bytes cost a small part of that work.
#pragma once

#include <algorithm>
#include <array>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <string>

#include "http/field_allocator.h"

namespace sluice::http {

// The buffers of one message, ready for one write: the head (with a chunk's size line when the
// message is chunked), the body, and the chunked framing's end. They point into the message and
// into the head string, which must outlive them.
using MessageBuffers = std::array<boost::asio::const_buffer, 3>;

// Writes `message`'s start line and fields into `head` (replacing what it held) and returns the
// buffers of the whole message, or of its head alone when not `with_body` (the answer to a HEAD
// request, whose fields still describe the body). A chunked message's body goes as one chunk
// and the last chunk (without trailers); any other body goes as it is, framed by the
// Content-Length its fields say. The message's target must not be empty (Beast's parser
// refuses such requests).
template <bool IsRequest>
MessageBuffers SerializeMessage(
    const boost::beast::http::message<IsRequest, boost::beast::http::string_body, Fields>& message,
    std::string& head, bool with_body = true);

// Writes what `socket` takes of `buffers` now, without waiting, and leaves in `buffers` what it
// did not take. True when nothing is left to do: all of it went, or the write failed (`ec`
// says why); false when the rest must wait for room (an asynchronous write), or when `socket`
// is not in non-blocking mode, where a write could block the thread. An asynchronous write that
// goes at once still completes through the event loop, one more turn of it; on a socket with
// room, which is almost always, this write is done when it returns.
template <class Socket>
bool WriteNow(Socket& socket, MessageBuffers& buffers, boost::system::error_code& ec) {
  if (!socket.non_blocking()) return false;
  size_t written = socket.write_some(buffers, ec);
  if (ec == boost::asio::error::would_block) ec = {};
  if (ec) return true;
  for (boost::asio::const_buffer& buffer : buffers) {
    const size_t taken = std::min(written, buffer.size());
    buffer += taken;
    written -= taken;
  }
  return boost::asio::buffer_size(buffers) == 0;
}

}  // namespace sluice::http
