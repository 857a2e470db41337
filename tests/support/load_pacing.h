// A load that tests run against a server while something happens to it (a failover, a restart,
// a fault) goes at a steady pace rather than as fast as it can: a load that spins while the
// server is away would take the cores from the servers the test waits for.
#pragma once

#include <chrono>
#include <thread>

namespace sluice::testing {

// The pause between two of a load's requests. Not a wait for anything: a rate.
inline void PaceLoad(std::chrono::milliseconds gap) { std::this_thread::sleep_for(gap); }

}  // namespace sluice::testing
