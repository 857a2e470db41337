// Errors as values: a Status says whether an operation worked and, if not, why;
// a Result<T> holds either a T or the Status that explains its absence.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace sluice {

// What kind of failure a Status reports. Callers branch on the code; the message is for people.
// Of a store's operation, kUnavailable says it was never sent, so that trying it again is safe;
// kDeadlineExceeded that it was sent and not answered, so that it may have been applied, and
// sending it again could apply it twice.
enum class StatusCode {
  kOk,
  kInvalidArgument,     // the caller's input is wrong; retrying will not help
  kUnavailable,         // the store cannot be reached (down, connecting, refused)
  kDeadlineExceeded,    // the store did not answer in time, or lost the connection first
  kResourceExhausted,   // too many checks in flight; shed load
  kStoreError,          // the store answered with an error reply
  kFailedPrecondition,  // the store cannot do this as asked (all-or-nothing across shards)
};

// The outcome of an operation: ok, or a code with a message for people.
class [[nodiscard]] Status {
 public:
  // An ok status.
  Status() = default;

  // A failed status; `code` must not be kOk.
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {
    assert(code != StatusCode::kOk);
  }

  static Status InvalidArgument(std::string message) {
    return {StatusCode::kInvalidArgument, std::move(message)};
  }
  static Status Unavailable(std::string message) {
    return {StatusCode::kUnavailable, std::move(message)};
  }
  static Status DeadlineExceeded(std::string message) {
    return {StatusCode::kDeadlineExceeded, std::move(message)};
  }
  static Status ResourceExhausted(std::string message) {
    return {StatusCode::kResourceExhausted, std::move(message)};
  }
  static Status StoreError(std::string message) {
    return {StatusCode::kStoreError, std::move(message)};
  }
  static Status FailedPrecondition(std::string message) {
    return {StatusCode::kFailedPrecondition, std::move(message)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "invalid argument: capacity must be positive", or "ok".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// The name of a code, as ToString prints it ("unavailable").
const char* StatusCodeName(StatusCode code);

// Either a value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(state_).ok());
  }

  bool ok() const { return std::holds_alternative<T>(state_); }

  // The error; an ok Status when the result holds a value.
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }

  // The value; only when ok().
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace sluice
