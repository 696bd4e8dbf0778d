// The partitioned cold tier's plan (pure code): partition counts, region room, reduce tables, and
// every reason to stay with the global table.
#include <gtest/gtest.h>

#include "groupby/hash/partition_plan.hpp"

namespace pp = tandem::hash_groupby::partition_plan;

namespace {
pp::Inputs big_uniform() {
  pp::Inputs in;
  in.cold_pairs = std::uint64_t{1} << 27;  // 2^27 u32 keys over 1M, none hot
  in.cold_distinct = 1e6;
  in.max_cold_share = 12.0 / 1.3e6;
  in.threads = 512;
  in.tile_keys = 8192;
  in.key_bytes = 4;
  in.free_bytes = std::size_t{70} << 30;
  in.shared_max = 64 * 1024;
  return in;
}
}  // namespace

TEST(PartitionPlan, ManyColdKeysGetPartitionsSizedForSharedTables) {
  const auto p = pp::plan(big_uniform());
  ASSERT_TRUE(p.use) << p.why;
  EXPECT_EQ(p.partitions, 512u);  // 1M / 2,048 keys a partition
  EXPECT_EQ(p.bits, 9u);
  EXPECT_EQ(p.capacity % 4, 0u);
  const double mean = double(std::uint64_t{1} << 27) / 512;
  EXPECT_GE(double(p.capacity), mean * 1.125);
  EXPECT_LE(double(p.capacity), mean * 1.125 + 2 * 8192 + 4);
  EXPECT_GE(p.slots, 2u * 1953);  // at most half full at the expected distinct keys a partition
  EXPECT_LE(std::size_t(p.slots) * 8, std::size_t{64} * 1024);
  EXPECT_EQ(p.slots % 4, 0u);  // the reduce table reads whole buckets of 4
  EXPECT_EQ(p.buffer_bytes, std::size_t(p.partitions) * p.capacity * 4);
}

TEST(PartitionPlan, PartitionsArePowersOfTwoWithinThreadsAndLimits) {
  auto in = big_uniform();
  in.cold_distinct = 10;  // few distinct keys: the floor of 32
  EXPECT_EQ(pp::plan(in).partitions, 32u);
  in.cold_distinct = 1e9;  // very many: at most 1,024 and at most the block size
  EXPECT_EQ(pp::plan(in).partitions, 512u);
  in.threads = 1024;
  EXPECT_EQ(pp::plan(in).partitions, 1024u);
  in.threads = 256;
  in.cold_distinct = 3e5;  // 146 -> 256
  EXPECT_EQ(pp::plan(in).partitions, 256u);
  in.cold_distinct = 1e9;
  const auto p = pp::plan(in);
  ASSERT_TRUE(p.use);
  EXPECT_EQ(p.slots, (64u * 1024 - 64) / 8 / 4 * 4);  // capped by shared memory, whole buckets of 4
}

TEST(PartitionPlan, StaysWithTheGlobalTableWhenItWouldNotPay) {
  auto small = big_uniform();
  small.cold_pairs = (std::uint64_t{1} << 20) - 1;
  EXPECT_FALSE(pp::plan(small).use);
  EXPECT_NE(pp::plan(small).why.find("2^20"), std::string::npos);

  auto heavy = big_uniform();  // a cold key with 1% of the records (Zipf without hot keys)
  heavy.max_cold_share = 0.01;
  EXPECT_FALSE(pp::plan(heavy).use);
  EXPECT_NE(pp::plan(heavy).why.find("heavy"), std::string::npos);

  auto no_memory = big_uniform();
  no_memory.free_bytes = std::size_t{1} << 30;  // the buffer needs ~600 MB: more than half
  EXPECT_FALSE(pp::plan(no_memory).use);
  EXPECT_NE(pp::plan(no_memory).why.find("memory"), std::string::npos);

  auto no_shared = big_uniform();
  no_shared.shared_max = 1024;
  EXPECT_FALSE(pp::plan(no_shared).use);
  EXPECT_NE(pp::plan(no_shared).why.find("shared"), std::string::npos);
}

TEST(PartitionPlan, EightByteKeysTakeWiderSlotsAndBuffers) {
  auto in = big_uniform();
  in.key_bytes = 8;
  in.tile_keys = 4096;
  const auto p = pp::plan(in);
  ASSERT_TRUE(p.use);
  EXPECT_EQ(p.buffer_bytes, std::size_t(p.partitions) * p.capacity * 8);
  EXPECT_LE(std::size_t(p.slots) * 12, std::size_t{64} * 1024);
}
