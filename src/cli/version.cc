#include "version.h"

#include "build_info.h"

namespace sluice::cli {

std::string VersionLine() {
  std::string line = "sluice " SLUICE_BUILD_VERSION;
  if (const std::string commit = SLUICE_COMMIT; !commit.empty()) {
    line += " (commit " + commit + ")";
  }
  return line;
}

}  // namespace sluice::cli
