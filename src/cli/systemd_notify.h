// systemd's notification protocol: `sluice serve` under a Type=notify unit tells the service
// manager when it is ready, reloading and stopping, as datagrams to the socket systemd names in
// $NOTIFY_SOCKET (the protocol of sd_notify(3), a few lines that need no libsystemd).
#pragma once

#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::cli {

class ServiceNotifier {
 public:
  // Notifies the socket named by $NOTIFY_SOCKET; without it (not under systemd, or not a
  // Type=notify unit) Notify does nothing.
  static ServiceNotifier FromEnvironment();

  // Notifies the socket at `socket`: a path, or "@name" for Linux's abstract namespace; an empty
  // one, nothing.
  explicit ServiceNotifier(std::string socket);

  // Sends `state`, newline-separated assignments such as "READY=1", as one datagram. A
  // failure comes back as a value for the caller to log: a service manager that cannot be told
  // is no reason to stop serving.
  Status Notify(std::string_view state) const;

 private:
  std::string socket_;
};

// "RELOADING=1" with the monotonic clock's time, which systemd 253's Type=notify-reload needs
// beside it and older versions ignore.
std::string ReloadingState();

}  // namespace sluice::cli
