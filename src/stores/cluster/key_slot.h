// Redis Cluster's hash slot of a key.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice {

inline constexpr uint16_t kClusterSlots = 16384;

// CRC16 (XMODEM: polynomial 0x1021, initial value 0, no reflection) of `data`.
uint16_t Crc16(std::string_view data);

// The slot Redis Cluster keeps `key` in: CRC16 of the key modulo 16,384, where a key holding a
// non-empty "{tag}" hashes only the tag (the first '{' and the first '}' after it), so that keys
// sharing a tag share a slot.
uint16_t KeySlot(std::string_view key);

}  // namespace sluice
