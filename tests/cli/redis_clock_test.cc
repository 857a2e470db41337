// The bucket runs on Redis's clock: a gateway whose own clock is hours off (Debian's faketime)
// gets the same decisions as one whose clock is right.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include "support/redis_server.h"

namespace sluice {
namespace {

std::string Run(const std::string& command) {
  std::string output;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return output;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) output += buffer.data();
  return output;
}

std::string Check(uint16_t port, int count, const std::string& clock_offset) {
  std::string command;
  if (!clock_offset.empty()) {
    // ASan wants to be first in the library list; faketime's preload comes before it.
    command = "ASAN_OPTIONS=verify_asan_link_order=0 faketime -f '" + clock_offset + "' ";
  }
  command += std::string(SLUICE_BINARY) +
             " check --store redis://127.0.0.1:" + std::to_string(port) +
             " --rule per-key:key:100:100:1h --attr key=ak_abc123" + " --count " +
             std::to_string(count) + " 2>&1";
  return Run(command);
}

std::string LastLine(const std::string& output) {
  std::string trimmed = output.substr(0, output.find_last_not_of('\n') + 1);
  return trimmed.substr(trimmed.rfind('\n') + 1);
}

TEST(RedisClockTest, ClockHoursOffGetsTheSameDecisions) {
  ASSERT_EQ(system("command -v faketime >/dev/null"), 0)
      << "faketime missing: run scripts/bootstrap";
  testing::RedisServer server;
  EXPECT_EQ(LastLine(Check(server.port(), 60, "")), "60 allow per-key=ok/40");
  // Five hours ahead: with its own clock this gateway would see a full bucket again.
  EXPECT_EQ(LastLine(Check(server.port(), 1, "+5h")), "1 allow per-key=ok/39");
  // Five hours behind: with its own clock the elapsed time would be negative.
  EXPECT_EQ(LastLine(Check(server.port(), 39, "-5h")), "39 allow per-key=ok/0");
  // One token every 36 s; the seconds these processes took have refilled a little of it.
  const std::string last = LastLine(Check(server.port(), 1, ""));
  const std::string prefix = "1 reject per-key=no/0 retry_after=";
  ASSERT_EQ(last.substr(0, prefix.size()), prefix) << last;
  const int retry_after = std::stoi(last.substr(prefix.size()));
  EXPECT_GE(retry_after, 30) << last;
  EXPECT_LE(retry_after, 36) << last;
  EXPECT_NE(last.find("s rejected_by=per-key"), std::string::npos) << last;
}

}  // namespace
}  // namespace sluice
