#include "http/field_allocator.h"

#include <array>
#include <new>
#include <utility>

namespace sluice::http::field_memory {

namespace {

// Blocks are kept by size in steps of kStep bytes, up to kLargest (larger ones go to malloc and
// back at once), at most kKept of a size on each thread: enough for the requests in flight on a
// loop, bounded for a thread that only ever frees.
constexpr size_t kStep = 16;
constexpr size_t kLargest = 512;
constexpr size_t kKept = 256;
constexpr size_t kSizes = kLargest / kStep;

// A thread's kept blocks; freed when the thread ends.
class ThreadCache {
 public:
  ~ThreadCache() {
    for (FreeBlock* block : free_) {
      while (block != nullptr) ::operator delete(std::exchange(block, block->next));
    }
  }

  void* Allocate(size_t size) {
    FreeBlock*& head = free_[size];
    if (head == nullptr) return ::operator new((size + 1) * kStep);
    --count_[size];
    return std::exchange(head, head->next);
  }

  void Deallocate(void* block, size_t size) {
    if (count_[size] == kKept) return ::operator delete(block);
    ++count_[size];
    free_[size] = new (block) FreeBlock{free_[size]};
  }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  std::array<FreeBlock*, kSizes> free_{};
  std::array<size_t, kSizes> count_{};
};

// The size class of a block of `bytes` (0: up to kStep bytes), or kSizes when it is not kept.
size_t SizeOf(size_t bytes) {
  return bytes == 0 || bytes > kLargest ? kSizes : (bytes - 1) / kStep;
}

// This thread's cache; none while the thread ends, after it was destroyed.
ThreadCache* Cache() {
  thread_local bool ended = false;
  struct Owner {
    ThreadCache cache;
    ~Owner() { ended = true; }
  };
  thread_local Owner owner;
  return ended ? nullptr : &owner.cache;
}

}  // namespace

void* Allocate(size_t bytes) {
  const size_t size = SizeOf(bytes);
  if (size == kSizes) return ::operator new(bytes);
  ThreadCache* cache = Cache();
  // Whole steps either way: a block may be kept by another thread's cache once freed.
  return cache != nullptr ? cache->Allocate(size) : ::operator new((size + 1) * kStep);
}

void Deallocate(void* block, size_t bytes) noexcept {
  const size_t size = SizeOf(bytes);
  ThreadCache* cache = size < kSizes ? Cache() : nullptr;
  if (cache != nullptr) return cache->Deallocate(block, size);
  ::operator delete(block);
}

}  // namespace sluice::http::field_memory
