// The headers of RESP replies read as their bytes come, so that what a reply declares is bounded
// before hiredis's reader acts on it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sluice/status.h"

namespace sluice::redis {

// What one reply may declare. hiredis 0.14 allocates an array's element pointers as soon as its
// header arrives, before any element: "*555555554\r\n" is 4.4 GB from twelve bytes. A server, or
// whoever sits between on plain TCP, could so make Sluice allocate gigabytes. The bounds are far
// above anything Sluice asks Redis for, and keep a reply's memory within a few tens of MiB.
struct RespLimits {
  // Elements declared by all the arrays of one reply together; hiredis allocates 8 bytes for
  // each at once. Sluice's largest reply is CLUSTER SLOTS on a cluster whose 16,384 slots are
  // each a range of its own: about 24 elements a range with two replicas, 400,000 in all (a
  // script call answers 4 integers an op, at most 64 ops a call).
  size_t max_elements = size_t{1} << 20;
  // One bulk string's length. The longest strings Sluice reads are hostnames (255 bytes at
  // most), node IDs and script hashes (40 bytes) and sentinels' messages; Redis's own limit,
  // proto-max-bulk-len, is 512 MB.
  size_t max_bulk_bytes = size_t{1} << 20;
  // One reply's bytes, from its type byte to its end: CLUSTER SLOTS as above is under 8 MB.
  size_t max_reply_bytes = size_t{64} << 20;
};

// An incremental reader of RESP2's framing (type bytes, lines, lengths, bulk payloads, arrays'
// nesting) that keeps no bytes: it only says whether the stream so far is RESP within `limits`.
// Stricter than hiredis where Redis never strays: a length or integer is an optional '-' and at
// most 19 digits that fit in 64 bits, ended by CRLF; a negative length is -1 (nil) only; arrays
// nest at most 8 deep, as hiredis allows.
class RespScanner {
 public:
  explicit RespScanner(RespLimits limits = {}) : limits_(limits) {}

  // Reads the next bytes of the stream. An error says why they are not RESP or exceed the
  // limits; every call after an error returns it again.
  Status Scan(std::string_view bytes);

 private:
  static constexpr size_t kMaxDepth = 8;

  enum class Phase {
    kType,       // before an item's type byte
    kLine,       // in a status or error line, up to CRLF
    kNumber,     // in a length or an integer, up to CRLF
    kNumberEnd,  // after a number's CR, before its LF
    kPayload,    // in a bulk string's bytes and their CRLF
  };

  // kPayload: skips what `bytes` hold of the bulk string from `i`, moving `i` past it.
  Status SkipPayload(std::string_view bytes, size_t& i);
  // Any other phase: reads one byte.
  Status Byte(char c);
  // kType: an item's type byte.
  Status Type(char c);
  Status Fail(std::string message);
  Status TooLong();
  Status Number(char c);
  Status EndNumber();
  // An item is complete: counts it in the arrays it is in, and ends the reply at the top.
  void ItemDone();

  const RespLimits limits_;
  Status error_;
  Phase phase_ = Phase::kType;
  char type_ = 0;              // of the item being read
  bool line_cr_ = false;       // kLine: the last byte was a CR
  bool negative_ = false;      // kNumber: a '-' came first
  int digits_ = 0;             // kNumber: digits so far
  uint64_t value_ = 0;         // kNumber: their value
  uint64_t payload_left_ = 0;  // kPayload: bytes before the bulk string's end, CRLF included
  std::array<uint64_t, kMaxDepth> open_{};  // elements still to come in each open array
  size_t depth_ = 0;                        // open arrays
  uint64_t reply_elements_ = 0;             // declared so far in this reply
  uint64_t reply_bytes_ = 0;                // read so far of this reply
};

}  // namespace sluice::redis
