// What `sluice --version` says: the version, and the commit built from when known.
#pragma once

#include <string>

namespace sluice::cli {

// "sluice 0.1.0 (commit 0123456789ab)": the CMake project's version, with "+dirty" when built
// from a tree with uncommitted changes (the same version the Debian package carries), and the
// commit when built from a git checkout.
std::string VersionLine();

}  // namespace sluice::cli
