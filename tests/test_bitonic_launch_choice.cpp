// The bitonic GPU launch shape from measured numbers: the register bound on the block size, the
// candidates it leaves, and the vector length picked by the counter ratio (pure code, no GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sort/bitonic/launch_choice.hpp"
#include "tandem/core/error.hpp"

using namespace tandem;
using namespace tandem::bitonic::detail;

TEST(BitonicLaunchChoice, RegisterBoundIsFloorLog2OfTheRatio) {
  EXPECT_EQ(register_bound_log2(65536, 32), 11);  // 2048 threads' worth
  EXPECT_EQ(register_bound_log2(65536, 64), 10);  // 1024
  EXPECT_EQ(register_bound_log2(65536, 65), 9);   // 1008 -> 512
  EXPECT_EQ(register_bound_log2(65536, 128), 9);
  EXPECT_EQ(register_bound_log2(65536, 255), 8);  // 257 -> 256
  EXPECT_EQ(register_bound_log2(64, 64), 0);      // one thread: 2^0, no candidate with N >= 1
  EXPECT_EQ(register_bound_log2(32, 64), 0);      // not even one thread
  EXPECT_EQ(register_bound_log2(65536, 0), 16);   // no registers reported: counted as 1
  EXPECT_THROW(register_bound_log2(0, 32), UsageError);
  try {
    register_bound_log2(65536, -1);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("regs_per_thread"), std::string::npos) << e.what();
  }
}

TEST(BitonicLaunchChoice, BlockCandidatesAreBoundedByRegistersAndTheDevice) {
  // Few registers: the device's 1024 threads bound it (N <= 10).
  EXPECT_EQ(block_candidates(65536, 32, 1024), (std::vector<int>{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  // 96 registers per thread: 65536 / 96 = 682 -> N <= 9.
  EXPECT_EQ(block_candidates(65536, 96, 1024).back(), 512);
  EXPECT_EQ(block_candidates(65536, 96, 1024).size(), 9u);
  // 255 registers: 257 -> 256.
  EXPECT_EQ(block_candidates(65536, 255, 1024).back(), 256);
  // A device limit that is not a power of two: floor(log2(768)) = 9.
  EXPECT_EQ(block_candidates(65536, 16, 768).back(), 512);
  EXPECT_TRUE(block_candidates(64, 64, 1024).empty());
  EXPECT_THROW(block_candidates(65536, 32, 0), UsageError);
}

TEST(BitonicLaunchChoice, FeasibleBlocksFitSharedMemoryAndData) {
  const auto regs = block_candidates(65536, 40, 1024);
  LaunchLimits l;
  l.shared_bytes_per_block = 48 * 1024;
  l.word_bytes = 8;
  l.elements = 1 << 20;
  l.min_block = 128;
  // 16 elements per thread of 8 bytes: tile 512 x 16 = 8192 words = 64 KiB + padding > 48 KiB.
  EXPECT_EQ(feasible_blocks(regs, 16, l), (std::vector<int>{128, 256}));
  EXPECT_EQ(feasible_blocks(regs, 2, l), (std::vector<int>{128, 256, 512, 1024}));
  l.elements = 1024;  // a tile must not exceed the data
  EXPECT_EQ(feasible_blocks(regs, 4, l), (std::vector<int>{128, 256}));
  EXPECT_EQ(tile_shared_bytes(1024, 4), (1024 + 32 + 1) * 4u);
}

TEST(BitonicLaunchChoice, ConflictShareAndRatio) {
  CounterSample s{50.0, 1000.0, 100.0, 10};  // 1000 conflict cycles over 10 SMs x 100 cycles
  EXPECT_DOUBLE_EQ(conflict_share(s), 1.0);
  EXPECT_DOUBLE_EQ(counter_ratio(s), 0.5);
  s.bank_conflicts = 250;
  EXPECT_DOUBLE_EQ(counter_ratio(s), 2.0);
  s.bank_conflicts = 0;
  EXPECT_TRUE(std::isinf(counter_ratio(s)));
  s.alu_utilisation_pct = 0;  // nothing ran on the ALU: the reading is empty
  EXPECT_TRUE(std::isnan(counter_ratio(s)));
  EXPECT_TRUE(std::isnan(conflict_share({50.0, 10.0, 0.0, 10})));
  EXPECT_TRUE(std::isnan(counter_ratio({std::nan(""), 10.0, 100.0, 10})));
}

TEST(BitonicLaunchChoice, PickTakesTheLargestRatio) {
  // Ratios 0.5, 2.0, 1.0: the second.
  EXPECT_EQ(pick_by_counters({{50, 1000, 100, 10}, {40, 200, 100, 10}, {60, 600, 100, 10}}), 1u);
  // Busier but with many more conflicts loses.
  EXPECT_EQ(pick_by_counters({{90, 9000, 100, 10}, {30, 100, 100, 10}}), 1u);
}

TEST(BitonicLaunchChoice, PickWithoutConflicts) {
  // No conflicts beats any finite ratio; among several without conflicts, the busier ALU wins.
  EXPECT_EQ(pick_by_counters({{80, 1, 100, 10}, {20, 0, 100, 10}, {35, 0, 100, 10}}), 2u);
  // Equal ratios and utilisation: the earlier candidate.
  EXPECT_EQ(pick_by_counters({{40, 0, 100, 10}, {40, 0, 100, 10}}), 0u);
}

TEST(BitonicLaunchChoice, PickSkipsUnusableSamples) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(pick_by_counters({{nan, 0, 100, 10}, {10, 50, 100, 10}}), 1u);
  EXPECT_EQ(pick_by_counters({{0, 0, 100, 10}, {10, 50, 100, 10}}), 1u);
  EXPECT_FALSE(pick_by_counters({{nan, 0, 100, 10}, {10, 5, 0, 10}}).has_value());
  EXPECT_FALSE(pick_by_counters({}).has_value());
}
