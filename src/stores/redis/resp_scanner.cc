#include "resp_scanner.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace sluice::redis {
namespace {

constexpr int kMaxDigits = 19;
// A 64-bit integer's: one more below zero than above.
constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;

// A byte for a message: printable as it is, else as a hex escape.
std::string Shown(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  constexpr char kHex[] = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  return std::string("0x") + kHex[u >> 4] + kHex[u & 15];
}

}  // namespace

Status RespScanner::Scan(std::string_view bytes) {
  if (!error_.ok()) return error_;
  size_t i = 0;
  while (i < bytes.size()) {
    Status s = phase_ == Phase::kPayload ? SkipPayload(bytes, i) : Byte(bytes[i++]);
    if (!s.ok()) return s;
  }
  return {};
}

// Skipped whole, not byte by byte.
Status RespScanner::SkipPayload(std::string_view bytes, size_t& i) {
  const uint64_t take = std::min<uint64_t>(payload_left_, bytes.size() - i);
  payload_left_ -= take;
  reply_bytes_ += take;
  i += take;
  if (reply_bytes_ > limits_.max_reply_bytes) return TooLong();
  if (payload_left_ == 0) ItemDone();
  return {};
}

Status RespScanner::Byte(char c) {
  if (++reply_bytes_ > limits_.max_reply_bytes) return TooLong();
  switch (phase_) {
    case Phase::kType:
      return Type(c);
    case Phase::kLine:
      if (line_cr_ && c == '\n') ItemDone();
      line_cr_ = c == '\r';
      return {};
    case Phase::kNumber:
      return Number(c);
    case Phase::kNumberEnd:
      return c == '\n' ? EndNumber() : Fail("a length's CR is followed by " + Shown(c));
    case Phase::kPayload:
      break;  // read by SkipPayload
  }
  return {};
}

Status RespScanner::Type(char c) {
  type_ = c;
  if (c == '+' || c == '-') {
    phase_ = Phase::kLine;
    line_cr_ = false;
    return {};
  }
  if (c == ':' || c == '$' || c == '*') {
    phase_ = Phase::kNumber;
    negative_ = false;
    digits_ = 0;
    value_ = 0;
    return {};
  }
  return Fail("a reply begins with " + Shown(c) + ", not a RESP type");
}

Status RespScanner::TooLong() {
  return Fail("a reply is longer than " + std::to_string(limits_.max_reply_bytes) + " bytes");
}

Status RespScanner::Fail(std::string message) {
  error_ = Status::StoreError("protocol error: " + std::move(message));
  return error_;
}

Status RespScanner::Number(char c) {
  if (c == '-' && digits_ == 0 && !negative_) {
    negative_ = true;
  } else if (c >= '0' && c <= '9') {
    if (++digits_ > kMaxDigits) return Fail("a length or integer has more than 19 digits");
    value_ = value_ * 10 + static_cast<uint64_t>(c - '0');
    if (value_ > kMaxMagnitude - (negative_ ? 0 : 1)) {
      return Fail("an integer does not fit in 64 bits");
    }
  } else if (c == '\r' && digits_ > 0) {
    phase_ = Phase::kNumberEnd;
  } else {
    return Fail("a length or integer holds " + Shown(c));
  }
  return {};
}

Status RespScanner::EndNumber() {
  if (type_ == ':') {
    ItemDone();
    return {};
  }
  const char* what = type_ == '$' ? "a bulk string's length" : "an array's length";
  if (negative_) {
    if (value_ != 1) return Fail(std::string(what) + " is negative");
    ItemDone();  // nil
    return {};
  }
  if (type_ == '$') {
    if (value_ > limits_.max_bulk_bytes) {
      return Fail("a bulk string of " + std::to_string(value_) + " bytes, more than " +
                  std::to_string(limits_.max_bulk_bytes));
    }
    phase_ = Phase::kPayload;
    payload_left_ = value_ + 2;
    return {};
  }
  reply_elements_ += value_;
  if (reply_elements_ > limits_.max_elements) {
    return Fail("an array of " + std::to_string(value_) + " elements, more than the " +
                std::to_string(limits_.max_elements) + " a reply may hold");
  }
  if (value_ == 0) {
    ItemDone();
    return {};
  }
  if (depth_ == kMaxDepth) return Fail("arrays nested more than 8 deep");
  open_[depth_++] = value_;
  phase_ = Phase::kType;
  return {};
}

void RespScanner::ItemDone() {
  phase_ = Phase::kType;
  while (depth_ > 0) {
    if (--open_[depth_ - 1] > 0) return;
    --depth_;  // that array is complete, an item of the one around it
  }
  reply_elements_ = 0;
  reply_bytes_ = 0;
}

}  // namespace sluice::redis
