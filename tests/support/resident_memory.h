// The test process's own resident memory, for tests that show it stays flat.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <fstream>

namespace sluice::testing {

// The process's resident memory, in bytes.
inline size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace sluice::testing
