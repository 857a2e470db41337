// The process's limit on open file descriptors, against what the configuration may hold open.
#pragma once

#include <cstddef>

#include "config/config.h"

namespace sluice::cli {

// What `config` may hold open at once: every listener's connections, the upstream pools, the
// store connections, and a margin for the rest (logs, the configuration files, timers).
size_t DescriptorsNeeded(const config::Config& config);

// Raises the soft limit on open files to the hard one (an unprivileged process may), and logs a
// warning naming both numbers when `needed` is still more than the limit: past it, accepts
// fail and connections wait.
void RaiseDescriptorLimit(size_t needed);

}  // namespace sluice::cli
