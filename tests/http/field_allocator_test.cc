#include "http/field_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/beast/http.hpp>
#include <string>
#include <thread>

namespace sluice::http {
namespace {

namespace bhttp = boost::beast::http;

TEST(FieldAllocatorTest, AFreedBlockServesTheThreadsNextBlockOfItsSize) {
  void* first = field_memory::Allocate(80);
  field_memory::Deallocate(first, 80);
  void* again = field_memory::Allocate(75);  // the same 16-byte step: 65 to 80 bytes
  EXPECT_EQ(again, first);
  void* other = field_memory::Allocate(96);  // another step: a block of its own
  EXPECT_NE(other, first);
  field_memory::Deallocate(again, 75);
  field_memory::Deallocate(other, 96);
}

TEST(FieldAllocatorTest, BlocksFreedOnAnotherThreadAndLargeOnesAreWhole) {
  // Written to its full size wherever it was kept: a block freed on another thread joins that
  // thread's lists, and one past the largest kept size goes back to malloc.
  for (size_t bytes : {size_t{1}, size_t{80}, size_t{512}, size_t{513}, size_t{4096}}) {
    auto* block = static_cast<char*>(field_memory::Allocate(bytes));
    std::thread([&] { field_memory::Deallocate(block, bytes); }).join();
    std::thread([&] {
      auto* reused = static_cast<char*>(field_memory::Allocate(bytes));
      std::fill(reused, reused + bytes, 'x');
      field_memory::Deallocate(reused, bytes);
    }).join();
  }
}

TEST(FieldAllocatorTest, MessagesOnItBehaveAsBeastsOwn) {
  bhttp::request<bhttp::string_body, Fields> request{bhttp::verb::get, "/api/x", 11};
  for (int i = 0; i < 100; ++i) request.insert("X-Field-" + std::to_string(i), std::to_string(i));
  bhttp::request<bhttp::string_body, Fields> moved = std::move(request);
  EXPECT_EQ(moved["X-Field-42"], "42");
  EXPECT_EQ(moved.target(), "/api/x");
  moved.erase("X-Field-42");
  EXPECT_EQ(moved.count("X-Field-42"), 0u);
}

}  // namespace
}  // namespace sluice::http
