#include "http/access_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace sluice::http {
namespace {

AccessEntry Entry() {
  AccessEntry entry;
  entry.time = 1.7e9;
  entry.client = "203.0.113.7";
  entry.method = "GET";
  entry.path = "/a \"b\"\n";
  entry.status = 429;
  entry.decision = "rejected";
  entry.rule = "per-key";
  entry.store_seconds = 0.0005;
  return entry;
}

TEST(AccessLogTest, AJsonLineHoldsTheRequestAndItsDecisionOnOneLine) {
  EXPECT_EQ(FormatAccessLine(Entry(), config::AccessLogConfig::Format::kJson),
            R"({"client":"203.0.113.7","decision":"rejected","method":"GET","path":"/a \"b\"\n",)"
            R"("rule":"per-key","status":429,"store_seconds":0.0005,)"
            R"("time":"2023-11-14T22:13:20.000Z"})"
            "\n");
  EXPECT_EQ(FormatAccessLine(Entry(), config::AccessLogConfig::Format::kText),
            "2023-11-14T22:13:20.000Z 203.0.113.7 GET 429 rejected per-key 0.000500 "
            R"("/a \"b\"\n")"
            "\n");
}

TEST(AccessLogTest, AFileThatCannotBeOpenedIsRefused) {
  EXPECT_FALSE(AccessLog::Open({"/nonexistent-folder/access.log"}).ok());
}

// A writer stuck on a full pipe (a disk that does not take writes) never holds a request up:
// lines past the buffer are dropped and counted. A write costs what formatting its line costs,
// measured in the same run (a sanitizer slows both alike), and no more.
TEST(AccessLogTest, WritesNeverWaitForTheDiskAndDropWhatTheBufferCannotHold) {
  constexpr int kLines = 20'000;  // ~3 MB: far past the pipe's 64 KiB
  config::AccessLogConfig config;
  config.buffer_lines = 100;
  const auto format_start = std::chrono::steady_clock::now();
  size_t formatted = 0;
  for (int i = 0; i < kLines; ++i) formatted += FormatAccessLine(Entry(), config.format).size();
  const auto formatting = std::chrono::steady_clock::now() - format_start;
  ASSERT_GT(formatted, size_t{kLines} * 100);

  const std::string fifo = "/tmp/sluice-test-access-fifo-" + std::to_string(::getpid());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // open, and never read
  ASSERT_GE(reader, 0);
  config.path = fifo;
  auto log = AccessLog::Open(config);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kLines; ++i) (*log)->Write(Entry());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, 2 * formatting + std::chrono::seconds(1))
      << "formatting alone took " << formatting.count() << " ns";
  EXPECT_GT((*log)->Dropped(), 0u);
  // Drained, so that the writer can finish and stop.
  std::thread drain([reader] {
    ::fcntl(reader, F_SETFL, 0);
    char buffer[65536];
    while (::read(reader, buffer, sizeof(buffer)) > 0) {
    }
  });
  log->reset();
  drain.join();
  ::close(reader);
  std::filesystem::remove(fifo);
}

}  // namespace
}  // namespace sluice::http
