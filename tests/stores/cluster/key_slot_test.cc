#include "stores/cluster/key_slot.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(KeySlotTest, Crc16IsXmodem) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);  // the catalogued check value of CRC-16/XMODEM
  EXPECT_EQ(Crc16(""), 0);
}

TEST(KeySlotTest, TheDesignDocumentsKeys) {
  EXPECT_EQ(KeySlot("rl:ip:203.0.113.42"), 2034);
  EXPECT_EQ(KeySlot("rl:key:ak_abc123"), 10489);
  EXPECT_EQ(KeySlot("rl:tenant:org_acme"), 1700);
}

TEST(KeySlotTest, HashTagsHashOnlyTheTag) {
  EXPECT_EQ(KeySlot("rl:{user1}:ip"), KeySlot("user1"));
  EXPECT_EQ(KeySlot("{user1}:a"), KeySlot("{user1}:b"));
  EXPECT_EQ(KeySlot("a{b}c{d}"), KeySlot("b"));               // the first tag only
  EXPECT_EQ(KeySlot("a{}b"), Crc16("a{}b") % kClusterSlots);  // an empty tag: the whole key
  EXPECT_EQ(KeySlot("a{b"), Crc16("a{b") % kClusterSlots);    // no closing brace
  EXPECT_EQ(KeySlot("a}b{c}"), KeySlot("c"));
  EXPECT_EQ(KeySlot("{{x}}"), KeySlot("{x"));  // from the first '{' to the first '}' after it
}

}  // namespace
}  // namespace sluice
