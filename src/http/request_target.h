// What RFC 9112 (section 3.2) asks of a server about a request's Host and target, apart from the
// sockets: the requests it must refuse, and an absolute-form target put in origin-form, so that
// every handler (and the upstream behind the proxy) sees one authority and one path.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string_view>

#include "http/field_allocator.h"
#include "sluice/status.h"

namespace sluice::http {

// Whether `host` is a valid Host field value: uri-host [":" port], where uri-host is an IP
// literal in brackets, an IPv4 address or a reg-name (unreserved, pct-encoded and sub-delims
// characters); empty is valid (RFC 9110 7.2).
bool IsValidHost(std::string_view host);

// Refuses (kInvalidArgument, the reason for a 400) an HTTP/1.1 request without Host, a request
// with more than one Host field or an invalid one, and an absolute-form target whose scheme is
// not http or https or whose authority is invalid. An absolute-form target becomes origin-form
// ("http://a.example/x?y" becomes "/x?y") and its authority the Host, replacing the one sent
// (RFC 9112 3.2.2). Other targets (origin, asterisk, authority form) are left as they are.
Status NormalizeHostAndTarget(
    boost::beast::http::request<boost::beast::http::string_body, Fields>& request);

}  // namespace sluice::http
