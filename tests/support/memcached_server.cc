#include "memcached_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "redis_server.h"  // FreePort
#include "support/wait_until.h"

namespace sluice::testing {
namespace {

bool Listening(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool up = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) ::close(fd);
  return up;
}

}  // namespace

MemcachedServer::MemcachedServer() : port_(FreePort()) {
  const std::string port = std::to_string(port_);
  process_ = std::make_unique<Process>(
      std::vector<std::string>{"memcached", "-l", "127.0.0.1", "-p", port, "-U", "0", "-t", "1"},
      "/tmp/sluice-test-memcached-" + port + ".log", "nobody");
  const bool up = WaitUntil([&] { return Listening(port_) || process_->Wait({}).has_value(); });
  if (!up || !Listening(port_)) throw std::runtime_error("memcached did not start on port " + port);
}

}  // namespace sluice::testing
