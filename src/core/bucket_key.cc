#include "sluice/bucket_key.h"

namespace sluice {
namespace {

bool KeptAsIs(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '@';
}

}  // namespace

Result<std::string> BucketKey(std::string_view prefix, std::string_view bucket,
                              std::string_view value, bool hash_tag) {
  if (value.size() > kMaxAttributeValueBytes) {
    return Status::InvalidArgument("attribute value is " + std::to_string(value.size()) +
                                   " bytes; at most " + std::to_string(kMaxAttributeValueBytes) +
                                   " are allowed");
  }
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string key;
  key.reserve(prefix.size() + bucket.size() + 3 + value.size());
  key.append(prefix).append(bucket).push_back(':');
  if (hash_tag) key.push_back('{');
  for (unsigned char c : value) {
    if (KeptAsIs(c)) {
      key.push_back(static_cast<char>(c));
    } else {
      key.push_back('%');
      key.push_back(kHex[c >> 4]);
      key.push_back(kHex[c & 0xF]);
    }
  }
  if (hash_tag) key.push_back('}');
  return key;
}

}  // namespace sluice
