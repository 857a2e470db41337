#include "systemd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <system_error>
#include <utility>

namespace sluice::cli {
namespace {

Status SystemError(const std::string& what) {
  return Status::Unavailable("$NOTIFY_SOCKET " + what + ": " +
                             std::generic_category().message(errno));
}

// Closes the descriptor when the scope ends.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

ServiceNotifier ServiceNotifier::FromEnvironment() {
  // Read once, as `serve` starts; nothing in the process changes its environment.
  const char* socket = std::getenv("NOTIFY_SOCKET");  // NOLINT(concurrency-mt-unsafe)
  return ServiceNotifier(socket == nullptr ? "" : socket);
}

ServiceNotifier::ServiceNotifier(std::string socket) : socket_(std::move(socket)) {}

Status ServiceNotifier::Notify(std::string_view state) const {
  if (socket_.empty()) return {};
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof(address.sun_path)) {
    return Status::InvalidArgument("$NOTIFY_SOCKET is longer than a socket path may be");
  }
  std::memcpy(address.sun_path, socket_.data(), socket_.size());
  // An abstract socket's name starts with a NUL byte, which the environment cannot carry.
  if (socket_[0] == '@') address.sun_path[0] = '\0';
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_.size());

  const FileDescriptor fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return SystemError("socket");
  const ssize_t sent = ::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&address), length);
  if (sent < 0) return SystemError(socket_);
  return {};
}

std::string ReloadingState() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return "RELOADING=1\nMONOTONIC_USEC=" +
         std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

}  // namespace sluice::cli
