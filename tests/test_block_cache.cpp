// The device block cache's bookkeeping (src/core/block_cache.hpp): blocks of about the asked size
// come back, the smallest first; other devices' blocks, blocks past the limits and wasteful ones
// do not; drain gives back what is held.
#include <gtest/gtest.h>

#include "core/block_cache.hpp"

namespace {

using tandem::gpu::BlockCache;

void* at(std::size_t i) { return reinterpret_cast<void*>(0x1000 * (i + 1)); }

TEST(BlockCache, TakesTheSmallestBlockThatHoldsTheRequestWithoutMuchWaste) {
  BlockCache c(64 << 20, 256 << 20);
  EXPECT_EQ(c.take(0, 100), nullptr);
  EXPECT_TRUE(c.keep({at(0), 8 << 20, 0}));
  EXPECT_TRUE(c.keep({at(1), 4 << 20, 0}));
  EXPECT_TRUE(c.keep({at(2), 4 << 20, 1}));
  EXPECT_EQ(c.bytes(), std::size_t{16} << 20);
  EXPECT_EQ(c.take(0, 1 << 20), nullptr) << "a 4 MiB block for 1 MiB wastes three quarters";
  EXPECT_EQ(c.take(0, (4 << 20) - 100), at(1));
  EXPECT_EQ(c.take(0, 4 << 20), nullptr) << "device 1's block is not device 0's";
  EXPECT_EQ(c.take(1, 4 << 20), at(2));
  EXPECT_EQ(c.take(0, (8 << 20) + 1), nullptr) << "too small";
  EXPECT_EQ(c.take(0, 7 << 20), at(0));
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_EQ(c.take(0, 7 << 20), nullptr) << "taken blocks are gone";
}

TEST(BlockCache, KeepsNothingPastItsLimitsAndDrainsByDevice) {
  BlockCache c(4 << 20, 10 << 20);
  EXPECT_FALSE(c.has_room((4 << 20) + 1));
  EXPECT_FALSE(c.keep({at(0), (4 << 20) + 1, 0})) << "larger than a kept block may be";
  EXPECT_FALSE(c.keep({nullptr, 16, 0}));
  EXPECT_TRUE(c.keep({at(1), 4 << 20, 0}));
  EXPECT_TRUE(c.keep({at(2), 4 << 20, 1}));
  EXPECT_FALSE(c.has_room(4 << 20));
  EXPECT_FALSE(c.keep({at(3), 4 << 20, 0})) << "12 MiB would pass the 10 MiB held at most";
  EXPECT_TRUE(c.keep({at(4), 2 << 20, 0}));
  const auto one = c.drain(1);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].p, at(2));
  EXPECT_EQ(c.bytes(), std::size_t{6} << 20);
  EXPECT_EQ(c.drain().size(), 2u);
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_TRUE(c.drain().empty());
}

}  // namespace
