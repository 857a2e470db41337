#include "descriptor_limit.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <cerrno>
#include <system_error>

namespace sluice::cli {

size_t DescriptorsNeeded(const config::Config& config) {
  constexpr size_t kMargin = 64;
  size_t listeners = 1;  // admin
  if (config.proxy) ++listeners;
  if (config.check_listen) ++listeners;
  if (config.rls && config.rls->json_listen) ++listeners;
  const size_t threads = config.threads == 0 ? 1 : config.threads;
  const size_t store_connections = threads * config.store.settings->ConnectionsPerLoop();
  const size_t upstream = config.proxy ? threads * config.upstream.pool : 0;
  return listeners * config.max_connections + upstream + store_connections + kMargin;
}

void RaiseDescriptorLimit(size_t needed) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    spdlog::warn("cannot read the limit on open files: {}", std::generic_category().message(errno));
    return;
  }
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    spdlog::warn(
        "the limit on open files is {} (hard limit {}), and the configuration may need {} "
        "(max_connections per listener, the upstream pools, the store): raise it (LimitNOFILE=, "
        "ulimit -n) or lower max_connections",
        limit.rlim_cur, limit.rlim_max, needed);
  }
}

}  // namespace sluice::cli
