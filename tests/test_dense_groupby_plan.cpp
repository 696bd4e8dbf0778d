// The dense-range path of the GPU group-by (pure code, src/groupby/hash/dense_plan.hpp):
// when a key range takes it, the partition geometry, the speculative regions (they hold evenly
// spread keys, and the exact regions of any split of the records), and the reduce's chunks.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "groupby/hash/dense_plan.hpp"

using namespace tandem::hash_groupby;

namespace {
constexpr std::size_t kFree = std::size_t{64} << 30;

dense::Inputs counts(std::uint64_t records, std::uint64_t min, std::uint64_t max) {
  dense::Inputs in;
  in.records = records;
  in.min = min;
  in.max = max;
  in.shared_acc_bytes = 4;
  in.acc_bytes = 8;
  in.value_bytes = 0;
  in.free_bytes = kFree;
  return in;
}

dense::Inputs sums(std::uint64_t records, std::uint64_t min, std::uint64_t max) {
  dense::Inputs in = counts(records, min, max);
  in.shared_acc_bytes = 32;
  in.acc_bytes = 32;
  in.value_bytes = 8;
  return in;
}
}  // namespace

TEST(DenseGroupByPlan, RangeIsMaxMinusMinPlusOneAndWrapsAtTheTop) {
  EXPECT_EQ(dense::key_range(5, 5), 1u);
  EXPECT_EQ(dense::key_range(0, 9), 10u);
  const std::uint64_t top = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(dense::key_range(top - 3, top), 4u);
  EXPECT_EQ(dense::key_range(0, top), 0u);  // 2^64
  EXPECT_EQ(dense::key_range(1, top), top);
}

TEST(DenseGroupByPlan, SlotsFillTheSharedBudgetInPowersOfTwo) {
  EXPECT_EQ(dense::block_slots(4), 16384u);  // u32 counts
  EXPECT_EQ(dense::block_slots(32), 2048u);  // Agg<double> / Agg<int64>
  EXPECT_EQ(dense::block_slots(24), 2048u);  // not a power of two: rounded down
}

TEST(DenseGroupByPlan, TheIssueBenchmarkIsPartitionedWithHalfTheBytes) {
  // 2^27 int32 keys uniform over [0, 2^20): 64 partitions of 2^14 count slots
  const auto p = dense::plan(counts(std::uint64_t{1} << 27, 0, (1u << 20) - 1));
  ASSERT_TRUE(p.use) << p.why;
  EXPECT_EQ(p.range, 1u << 20);
  EXPECT_EQ(p.slots, 1u << 14);
  EXPECT_EQ(p.shift, 14u);
  EXPECT_EQ(p.partitions, 64u);
  EXPECT_GE(p.region, (std::uint64_t{1} << 21));  // the even share, with slack
  EXPECT_LE(p.region, (std::uint64_t{1} << 21) * 5 / 4);
  EXPECT_EQ(p.region % dense::kRegionAlign, 0u);
  EXPECT_EQ(p.table_bytes, (std::size_t{1} << 20) * 8);
  // u16 per record (the hash path's partitions hold the 4-byte keys)
  EXPECT_LE(p.buffer_bytes, (std::size_t{1} << 27) * 2 * 5 / 4);
}

TEST(DenseGroupByPlan, OneBlocksSlotsReduceDirectly) {
  for (std::uint64_t R : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{1000}, std::uint64_t{16384}}) {
    const auto p = dense::plan(counts(10, 1000, 1000 + R - 1));  // few records: still direct
    ASSERT_TRUE(p.use) << R << ": " << p.why;
    EXPECT_EQ(p.partitions, 0u) << R;
    EXPECT_EQ(p.buffer_bytes, 0u) << R;
    EXPECT_EQ(p.range, R);
  }
  const auto above = dense::plan(counts(1u << 20, 0, 16384));  // R = 2^14 + 1
  ASSERT_TRUE(above.use);
  EXPECT_EQ(above.partitions, 2u);
  // wide accumulators: 2^11 slots a block
  EXPECT_EQ(dense::plan(sums(10, 7, 7 + 2047)).partitions, 0u);
  EXPECT_EQ(dense::plan(sums(1u << 20, 7, 7 + 2048)).partitions, 2u);
}

TEST(DenseGroupByPlan, WideOrSparseRangesStayOnTheHashPath) {
  // more than 1024 partitions of slots
  auto p = dense::plan(counts(std::uint64_t{1} << 30, 0, (std::uint64_t{1} << 24)));
  EXPECT_FALSE(p.use);
  EXPECT_NE(p.why.find("partitions"), std::string::npos) << p.why;
  EXPECT_TRUE(dense::plan(counts(std::uint64_t{1} << 30, 0, (std::uint64_t{1} << 24) - 1)).use);
  EXPECT_FALSE(dense::plan(sums(std::uint64_t{1} << 30, 0, std::uint64_t{1} << 21)).use);
  // the whole u64 range (R = 2^64 wraps to 0)
  p = dense::plan(counts(100, 0, std::numeric_limits<std::uint64_t>::max()));
  EXPECT_FALSE(p.use);
  EXPECT_NE(p.why.find("2^64"), std::string::npos) << p.why;
  // a range wider than the records: a mostly empty table
  p = dense::plan(counts(100000, 0, 200000));
  EXPECT_FALSE(p.use);
  EXPECT_NE(p.why.find("wider than"), std::string::npos) << p.why;
  EXPECT_TRUE(dense::plan(counts(200001, 0, 200000)).use);
  EXPECT_FALSE(dense::plan(counts(0, 0, 0)).use);  // empty
}

TEST(DenseGroupByPlan, RangeFitsIsMonotone) {
  for (std::uint64_t records : {std::uint64_t{10}, std::uint64_t{1} << 20, std::uint64_t{1} << 31}) {
    bool fits = true;
    for (std::uint64_t R = 1; R < (std::uint64_t{1} << 26); R = R * 3 + 1) {
      const bool f = dense::range_fits(R, records, 4);
      EXPECT_FALSE(f && !fits) << "records " << records << " R " << R;
      fits = f;
    }
  }
  EXPECT_FALSE(dense::range_fits(0, std::uint64_t{1} << 31, 4));
}

TEST(DenseGroupByPlan, NoRoomOnTheDeviceMeansTheHashPath) {
  auto in = counts(std::uint64_t{1} << 27, 0, (1u << 20) - 1);
  in.free_bytes = 100 << 20;
  const auto p = dense::plan(in);
  EXPECT_FALSE(p.use);
  EXPECT_NE(p.why.find("free"), std::string::npos) << p.why;
  in.free_bytes = p.table_bytes + p.buffer_bytes;
  EXPECT_TRUE(dense::plan(in).use);
}

TEST(DenseGroupByPlan, RegionsHoldEvenKeysAndEveryExactSplit) {
  for (std::uint64_t records :
       {std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{1} << 27, (std::uint64_t{1} << 32) - 1}) {
    for (std::uint64_t R : {std::uint64_t{16385}, std::uint64_t{1} << 20, std::uint64_t{3} << 21}) {
      if (!dense::range_fits(R, records, 4)) continue;
      auto in = counts(records, 100, 100 + R - 1);
      in.free_bytes = std::numeric_limits<std::size_t>::max() / 2;
      const auto p = dense::plan(in);
      ASSERT_TRUE(p.use) << p.why;
      // a full partition's even share fits its region
      EXPECT_GE(p.region, records * p.slots / R) << records << " " << R;
      // the exact regions of any split (each rounded up) fit the buffer
      EXPECT_GE(p.region * p.partitions, records + p.partitions * (dense::kRegionAlign - 1)) << records << " " << R;
      EXPECT_EQ(p.buffer_bytes, p.partitions * p.region * 2);
    }
  }
  EXPECT_EQ(dense::exact_region(0), 0u);
  EXPECT_EQ(dense::exact_region(1), 8u);
  EXPECT_EQ(dense::exact_region(16), 16u);
}

TEST(DenseGroupByPlan, ReduceChunksSpreadTheInputAndCoverIt) {
  const std::uint32_t S = 1u << 14;
  EXPECT_EQ(dense::reduce_chunk(std::uint64_t{1} << 27, 396, S) % dense::kRegionAlign, 0u);
  EXPECT_GE(dense::reduce_chunk(std::uint64_t{1} << 27, 396, S) * 396, std::uint64_t{1} << 27);
  EXPECT_EQ(dense::reduce_chunk(100, 396, S), 4u * S);  // at least 4 x the slots
  EXPECT_EQ(dense::reduce_chunk(0, 0, 0), dense::kRegionAlign);
  // every partition's chunks: sum ceil(n_p / chunk) <= records / chunk + P
  const std::uint64_t chunk = 1000;
  EXPECT_EQ(dense::reduce_blocks(10000, chunk, 0), 10u);
  EXPECT_EQ(dense::reduce_blocks(10001, chunk, 3), 14u);
  EXPECT_EQ(dense::reduce_blocks(0, chunk, 0), 1u);
}
