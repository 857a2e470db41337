// Appends Redis commands, in RESP, to an output buffer without allocating per command.
#pragma once

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace sluice::redis {

// One command's arguments, written as a RESP array of bulk strings.
class RespWriter {
 public:
  explicit RespWriter(std::string& out) : out_(out) {}

  // Starts a command of `argc` arguments; exactly that many Arg calls must follow.
  RespWriter& Command(size_t argc) {
    out_.push_back('*');
    AppendNumber(static_cast<int64_t>(argc));
    out_.append("\r\n");
    return *this;
  }

  RespWriter& Arg(std::string_view arg) {
    out_.push_back('$');
    AppendNumber(static_cast<int64_t>(arg.size()));
    out_.append("\r\n").append(arg).append("\r\n");
    return *this;
  }

  RespWriter& Arg(int64_t number) {
    char digits[24];
    auto* end = std::to_chars(digits, digits + sizeof digits, number).ptr;
    return Arg(std::string_view(digits, static_cast<size_t>(end - digits)));
  }

  // A whole command of string arguments.
  RespWriter& Write(std::initializer_list<std::string_view> args) {
    Command(args.size());
    for (std::string_view a : args) Arg(a);
    return *this;
  }

 private:
  void AppendNumber(int64_t n) {
    char digits[24];
    auto* end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out_.append(digits, end);
  }

  std::string& out_;
};

}  // namespace sluice::redis
