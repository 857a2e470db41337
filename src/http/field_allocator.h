// Memory for the fields of the gateway's HTTP messages. Beast's basic_fields allocates every field
// (name and value together), the target and the reason phrase on its own, a dozen times a
// proxied request, and frees them all with the message. glibc's malloc keeps only 7 freed blocks
// of a size per thread before its slower paths (fast bins, and their consolidation), which a
// request's fields overflow; this allocator keeps freed blocks on lists of its own, per thread and
// by size, and hands them to the thread's next message.
#pragma once

#include <boost/beast/http/fields.hpp>
#include <cstddef>

// Whether the allocator must leave freed memory to the sanitizer (GCC's macro, clang's feature).
#if defined(__SANITIZE_ADDRESS__)
#define SLUICE_FIELDS_PLAIN_NEW 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLUICE_FIELDS_PLAIN_NEW 1
#endif
#endif

namespace sluice::http {

namespace field_memory {

// A block of at least `bytes`: one this thread kept when there is one.
void* Allocate(size_t bytes);

// Takes back a block Allocate gave for `bytes`, on this thread or any other: kept for this
// thread's next Allocate (up to a bound for each size), else freed.
void Deallocate(void* block, size_t bytes) noexcept;

}  // namespace field_memory

// A standard allocator over the thread's ThreadCache; stateless, so any two compare equal and
// a block may be freed on another thread than the one it came from. Under AddressSanitizer it
// is plain new and delete, so that a use after free is still caught.
template <class T>
class FieldAllocator {
 public:
  using value_type = T;

  FieldAllocator() noexcept = default;
  template <class U>
  FieldAllocator(const FieldAllocator<U>& /*other*/) noexcept {}

  T* allocate(size_t n) {
#ifdef SLUICE_FIELDS_PLAIN_NEW
    return static_cast<T*>(::operator new(n * sizeof(T)));
#else
    return static_cast<T*>(field_memory::Allocate(n * sizeof(T)));
#endif
  }

  void deallocate(T* block, size_t n) noexcept {
#ifdef SLUICE_FIELDS_PLAIN_NEW
    ::operator delete(block);
    (void)n;
#else
    field_memory::Deallocate(block, n * sizeof(T));
#endif
  }

  friend bool operator==(const FieldAllocator& /*a*/, const FieldAllocator& /*b*/) noexcept {
    return true;
  }
};

// The fields of every message the gateway reads, makes and writes.
using Fields = boost::beast::http::basic_fields<FieldAllocator<char>>;

}  // namespace sluice::http
