// The small shared helpers on the CPU: launch shapes, hash functions, the "{}" formatter of CUDA
// sources.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <unordered_set>

#include "tandem/core/hash.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"

using namespace tandem;

TEST(GridFor, CoversTheItemsWithinTheCap) {
  static_assert(gpu::grid_for(0, 256, 100) == 1);
  EXPECT_EQ(gpu::grid_for(1, 256, 100), 1u);
  EXPECT_EQ(gpu::grid_for(256, 256, 100), 1u);
  EXPECT_EQ(gpu::grid_for(257, 256, 100), 2u);
  EXPECT_EQ(gpu::grid_for(std::uint64_t{1} << 40, 256, 4096), 4096u);  // capped
  EXPECT_EQ(gpu::grid_for(10, 1, 3), 3u);                              // blocks as items
  EXPECT_EQ(gpu::grid_for(10, 1, 0), 1u);                              // a cap of 0 still launches one
}

TEST(Hash, KeyHashIsTheFinaliserOfItsWidth) {
  EXPECT_EQ(hash32(std::uint32_t{12345}), fmix32(12345u));
  EXPECT_EQ(hash32(std::uint64_t{12345}), std::uint32_t(mix64(12345u) >> 32));
  EXPECT_EQ(fmix32(0), 0u);
  EXPECT_EQ(mix64(0), 0u);
  // Bijections: no two of the first 2^16 inputs collide.
  std::unordered_set<std::uint32_t> a, b;
  for (std::uint32_t i = 0; i < (1u << 16); ++i) {
    a.insert(fmix32(i));
    b.insert(scatter32(i));
  }
  EXPECT_EQ(a.size(), 1u << 16);
  EXPECT_EQ(b.size(), 1u << 16);
  EXPECT_NE(scatter32(7), fmix32(7));  // independent of the tables' hash
  EXPECT_EQ(hash_bytes("word", 4), hash_bytes(std::string("word").data(), 4));
  EXPECT_NE(hash_bytes("word", 4), hash_bytes("wore", 4));
}

TEST(CudaFormat, ReplacesBracesInOrder) {
  EXPECT_EQ(gpu::format("{} keys in {} ms", 42, 1.5), "42 keys in 1.5 ms");
  EXPECT_EQ(gpu::format("gpu{}", 0), "gpu0");
  EXPECT_EQ(gpu::format("no braces"), "no braces");
  EXPECT_EQ(gpu::format("{} and {}", "one"), "one and {}");  // surplus braces stay
  EXPECT_EQ(gpu::format("{}", std::string("s"), 2), "s");    // surplus arguments are dropped
}
