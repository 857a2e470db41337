// Bucket keys: one per rule and attribute value, built so that no value can collide.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice {

// The longest attribute value a key may carry, in bytes. Longer values are refused rather than
// truncated or hashed, since either could make two clients share a bucket.
inline constexpr size_t kMaxAttributeValueBytes = 1024;

// Returns "<prefix><bucket>:<encoded value>". The value is percent-encoded: bytes other than
// letters, digits and "-._~@" become %XX, so an encoded value never holds ':', '{', '}', '%' on
// its own, spaces or control characters. Because `bucket` comes from the configuration and the
// value part has no ':', two different (bucket, value) pairs always give different keys.
// With `hash_tag`, the encoded value is wrapped in braces, "<prefix><bucket>:{<value>}", a Redis
// Cluster hash tag: every bucket of one value then lives in one slot.
// Fails with kInvalidArgument when `value` is longer than kMaxAttributeValueBytes.
Result<std::string> BucketKey(std::string_view prefix, std::string_view bucket,
                              std::string_view value, bool hash_tag = false);

}  // namespace sluice
