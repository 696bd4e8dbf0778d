// The GPU hash group-by's plan (pure code, src/groupby/hash/plan.hpp and tuning.hpp):
// sample and table sizes, the hot-key threshold read off the count histogram, the shared-memory
// layout within the budget and the device's limit, the partitioned tier's layout, the pass mode
// and the tuner's candidates.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "groupby/hash/bucket_table.hpp"
#include "groupby/hash/plan.hpp"
#include "groupby/hash/tuning.hpp"
#include "tandem/core/error.hpp"

using namespace tandem;
using namespace tandem::hash_groupby;
using tandem::hash_groupby::Options;

namespace {

std::vector<std::uint32_t> empty_hist() { return std::vector<std::uint32_t>(tuning::kBins, 0); }

HotInputs counted(const std::vector<std::uint32_t>& hist, std::uint32_t distinct, std::uint64_t sampled,
                  std::size_t entries, double fraction) {
  HotInputs in;
  in.distinct = distinct;
  in.sampled = sampled;
  in.hist = hist;
  in.shared_entries = entries;  // budget 0: the capacity is `entries`
  in.hot_fraction = fraction;
  return in;
}

// A threshold pick of `keys` keys: `above` seen more than `count` times, `equal` seen exactly so.
void expect_threshold(const HotChoice& c, std::uint32_t keys, std::uint32_t count, std::uint32_t above,
                      std::uint32_t equal) {
  ASSERT_EQ(c.pick, HotChoice::Pick::threshold);
  EXPECT_EQ(c.keys, keys);
  EXPECT_EQ(c.count, count);
  EXPECT_EQ(c.above, above);
  EXPECT_EQ(c.equal, equal);
}

}  // namespace

TEST(HashGroupByPlan, FromOptionsClampsAndMarksFixedPlans) {
  const HashPlan d = plan_from(Options{});
  EXPECT_EQ(d.threads, tuning::kThreads);
  EXPECT_EQ(d.smem_budget, tuning::kSharedBudget);
  EXPECT_FALSE(options_fix_plan(Options{}));
  Options o;
  o.block_threads = 33;
  EXPECT_EQ(plan_from(o).threads, 64);  // rounded up to whole warps
  o.block_threads = 5000;
  EXPECT_EQ(plan_from(o).threads, 1024);
  o.block_threads = 1;
  EXPECT_EQ(plan_from(o).threads, 32);
  EXPECT_TRUE(options_fix_plan(o));
  Options f;
  f.sample_fraction = 0.9;
  f.hot_fraction = 3;
  f.spill_entries = std::size_t{1} << 40;
  f.shared_entries = 100;
  const HashPlan p = plan_from(f);
  EXPECT_EQ(p.p, 0.5);
  EXPECT_EQ(p.hot_fraction, 1.0);
  EXPECT_EQ(p.overflow_cap, 1u << 30);
  EXPECT_EQ(p.smem_budget, 0u);  // the hot table is sized by shared_entries
  EXPECT_EQ(shared_budget(p, 227 * 1024), 0u);
  for (auto set : {+[](Options& x) { x.blocks = 1; }, +[](Options& x) { x.result_entries = 1; },
                   +[](Options& x) { x.spill_entries = 1; }, +[](Options& x) { x.hot_fraction = 0; }}) {
    Options x;
    set(x);
    EXPECT_TRUE(options_fix_plan(x));
  }
}

TEST(HashGroupByPlan, SampleCoversSmallInputsAndClampsLargeOnes) {
  EXPECT_EQ(sample_records(0, 0.01), 0u);
  EXPECT_EQ(sample_records(4096, 0.01), 4096u);      // a small input is sampled whole
  EXPECT_EQ(sample_records(4097, 0.01), 4096u);      // at least 4,096 records
  EXPECT_EQ(sample_records(1000001, 0.01), 10001u);  // rounded up
  EXPECT_EQ(sample_records(10000, 0.5), 5000u);
  EXPECT_EQ(sample_records(10000, 0.0), 4096u);
  EXPECT_EQ(sample_records(std::uint64_t{1} << 32, 0.01), 42949673u);
  EXPECT_EQ(sample_slots(0), 16u);
  EXPECT_EQ(sample_slots(4096), 8208u);  // twice the records: the sample table never overflows
  EXPECT_EQ(top_min_count(0), 2u);       // a top key is seen at least twice
  EXPECT_EQ(top_min_count(47), 2u);
  EXPECT_EQ(top_min_count(48), 3u);
  EXPECT_EQ(top_min_count(1600), 100u);  // 1/16 of the sample
}

TEST(HashGroupByPlan, TableAndOverflowSizes) {
  HashPlan pl;
  EXPECT_EQ(overflow_capacity(pl, 0), 4096u);
  EXPECT_EQ(overflow_capacity(pl, 32 * 5000), 5000u);
  EXPECT_EQ(overflow_capacity(pl, (std::uint64_t{1} << 32) - 1), 1u << 24);
  EXPECT_EQ(table_slots(pl, 0), 1024u);
  EXPECT_EQ(table_slots(pl, 1000), 4024u);  // 3x the estimate + 1,024
  EXPECT_EQ(table_slots(pl, 1e12), 0x7fffffffu);
  pl.table_entries = 1;
  EXPECT_EQ(table_slots(pl, 1e6), 2u);  // given slots, at least 2
  pl.overflow_cap = 7;
  EXPECT_EQ(overflow_capacity(pl, 1u << 30), 7u);
  EXPECT_EQ(probe_limit(2), 2u);
  EXPECT_EQ(probe_limit(512), 512u);
  EXPECT_EQ(probe_limit(1u << 20), 512u);
  EXPECT_DOUBLE_EQ(l2_keys(50u << 20, 3.0, 8), 0.5 * (50u << 20) / 24.0);
  // a grow: twice what the table holds, at least twice the table
  EXPECT_EQ(grown_slots(100, 50, 200), 1324u);
  EXPECT_EQ(grown_slots(10, 1, 1000000), 2000000u);
  EXPECT_EQ(grown_slots(0x7fffffffu, 0x7fffffffu, 0x7fffffffu), 0x7fffffffu);
  // a retry: both 4x larger, the list within 2^30
  const HashPlan r = plan_after_overflow(HashPlan{}, 10, 1u << 29);
  EXPECT_EQ(r.table_entries, 64u);
  EXPECT_EQ(r.overflow_cap, 1u << 30);
  EXPECT_EQ(plan_after_overflow(HashPlan{}, 1000, 4096).table_entries, 4000u);
}

TEST(HashGroupByPlan, CompactGridCoversEverySlotAndTheMarker) {
  const std::uint64_t tile = tuning::kCompactTile;
  EXPECT_EQ(compact_grid(0), 1);
  EXPECT_EQ(compact_grid(tile - 1), 1);  // tile - 1 slots + the marker's slot: one tile
  EXPECT_EQ(compact_grid(tile), 2);
  EXPECT_EQ(compact_grid(std::uint64_t{1} << 40), int(tuning::kGridCap));  // the blocks loop over the rest
  for (std::uint64_t cap : {1ull, 1000ull, 1023ull, 1024ull, 1025ull, 4000000ull})
    if (compact_grid(cap) < int(tuning::kGridCap)) {
      EXPECT_GE(compact_grid(cap) * tile, cap + 1) << cap;
    }
}

TEST(HashGroupByPlan, ColdMaxIsTheHighestBinInUse) {
  auto h = empty_hist();
  EXPECT_EQ(cold_max_count(h, 0), 0.0);
  h[5] = 3;
  EXPECT_EQ(cold_max_count(h, 0), 5.0);
  h[tuning::kBins - 1] = 2;
  EXPECT_EQ(cold_max_count(h, 123456), 123456.0);  // the last bin: bounded by its pairs
}

TEST(HashGroupByPlan, HotCapacityLayoutStaysWithinTheBudget) {
  HotInputs in;
  in.budget = 48 * 1024;
  EXPECT_EQ(hot_capacity(in), 4912u);  // (49152 - 20) / 8 = 6141 slots, 1535 buckets at 4/5
  in.buckets = false;
  EXPECT_EQ(hot_capacity(in), 3070u);  // linear probing: half of 6141
  for (std::size_t key : {4u, 8u})
    for (std::size_t acc : {4u, 8u, 32u})
      for (std::size_t budget : {1024u * 2, 24u * 1024, 48u * 1024, 96u * 1024, 110u * 1024, 144u * 1024})
        for (bool buckets : {true, false}) {
          HotInputs x;
          x.budget = budget;
          x.buckets = buckets;
          x.key_bytes = key;
          x.acc_bytes = acc;
          const std::uint32_t h = hot_capacity(x);
          ASSERT_GT(h, 0u);
          const SharedLayout l = hot_layout(hot_slots(h, 0, buckets), 512, budget, 227 * 1024, key, acc);
          // linear probing's 2H + 1 slots may pass the budget's slots by one
          const std::size_t slack = buckets ? 0 : key + acc + 16;
          EXPECT_LE(l.bytes, budget + slack) << key << " " << acc << " " << budget << " " << buckets;
          EXPECT_GE(l.slots, buckets ? h : 2 * h);  // at most 4/5 (buckets) or half full
        }
  in.budget = 0;
  in.shared_entries = 777;
  EXPECT_EQ(hot_capacity(in), 777u);
}

TEST(HashGroupByPlan, SharedBudgetLeavesRoomForTheKernel) {
  HashPlan pl;
  EXPECT_EQ(shared_budget(pl, 227 * 1024), 48u * 1024);
  pl.smem_budget = 300 * 1024;
  EXPECT_EQ(shared_budget(pl, 227 * 1024), 226u * 1024);
}

TEST(HashGroupByPlan, SubTablesArePowersOfTwoUpToOnePerWarp) {
  // 100 slots of u32 keys and counts: 400 + 404 C bytes
  EXPECT_EQ(hot_table_bytes(100, 1, 4, 4), 804u);
  EXPECT_EQ(shared_acc_offset(3, 4), 16u);                                   // keys rounded up to 16 bytes
  EXPECT_EQ(hot_layout(100, 512, 48 * 1024, 227 * 1024, 4, 4).copies, 16u);  // 16 warps
  EXPECT_EQ(hot_layout(100, 64, 48 * 1024, 227 * 1024, 4, 4).copies, 2u);
  EXPECT_EQ(hot_layout(100, 512, 0, 227 * 1024, 4, 4).copies, 1u);  // no budget: one copy
  const std::size_t two = hot_table_bytes(100, 2, 4, 4);
  EXPECT_EQ(hot_layout(100, 512, two, 227 * 1024, 4, 4).copies, 2u);
  EXPECT_EQ(hot_layout(100, 512, two - 1, 227 * 1024, 4, 4).copies, 1u);
  EXPECT_EQ(hot_layout(100, 512, two, 227 * 1024, 4, 4).bytes, two);
  // a table beyond what a block may have is an error naming the sizes
  EXPECT_THROW(hot_layout(100000, 512, 0, 48 * 1024, 4, 4), UsageError);
  EXPECT_NO_THROW(hot_layout(100, 512, 0, hot_table_bytes(100, 1, 4, 4), 4, 4));
}

TEST(HashGroupByPlan, HotSlotsByTableKind) {
  EXPECT_EQ(hot_slots(10, 256, true), 256u);  // two-choice: placed on the host
  EXPECT_EQ(hot_slots(1, 0, true), 4u);       // one bucket
  EXPECT_EQ(hot_slots(16, 0, true), 4u * hash_groupby::buckets::buckets_for(16));
  EXPECT_EQ(hot_slots(10, 0, false), 21u);  // linear probing: half full
  EXPECT_EQ(two_choice_slots(1), 64u);
  EXPECT_EQ(two_choice_slots(100), 400u);  // a quarter full
}

TEST(HashGroupByPlan, AllSampledKeysAreHotWhenTheyFit) {
  auto h = empty_hist();
  h[3] = 100;
  const HotChoice c = choose_hot(counted(h, 100, 300, 100, 0.1));
  EXPECT_EQ(c.pick, HotChoice::Pick::all);
  EXPECT_EQ(c.keys, 100u);
  EXPECT_EQ(c.share, 1.0);
  EXPECT_EQ(choose_hot(counted(h, 101, 303, 100, 0.1)).pick, HotChoice::Pick::threshold);  // one too many
  EXPECT_EQ(choose_hot(counted(empty_hist(), 0, 0, 100, 0.1)).pick, HotChoice::Pick::none);
}

TEST(HashGroupByPlan, ThresholdTakesKeysAboveThenSomeAtTheCount) {
  auto h = empty_hist();
  h[1] = 9000;
  h[10] = 900;
  h[100] = 100;
  const HotChoice c = choose_hot(counted(h, 10000, 28000, 500, 0.1));  // want min(500, 1000)
  expect_threshold(c, 500, 10, 100, 400);
  EXPECT_DOUBLE_EQ(c.share, (100.0 * 100 + 400.0 * 10) / 28000);
  // the fraction decides when it is below the capacity
  EXPECT_EQ(choose_hot(counted(h, 10000, 28000, 5000, 0.05)).keys, 500u);
  expect_threshold(choose_hot(counted(h, 10000, 28000, 5000, 0.01)), 100, 100, 0, 100);  // exactly bin 100
}

TEST(HashGroupByPlan, ThresholdDownToKeysSeenOnce) {
  auto h = empty_hist();
  h[1] = 1000;
  h[3] = 10;
  expect_threshold(choose_hot(counted(h, 1010, 1030, 100, 1.0)), 100, 1, 10, 90);
}

TEST(HashGroupByPlan, NoHotTableBelowTheMinimumShare) {
  auto h = empty_hist();
  h[1] = 90000;
  h[2] = 5000;  // the top 5,000 keys hold 10% of the sample
  auto in = counted(h, 95000, 100000, 5000, 0.1);
  const HotChoice c = choose_hot(in);
  ASSERT_EQ(c.pick, HotChoice::Pick::threshold);
  EXPECT_DOUBLE_EQ(c.share, 0.1);
  in.partitioned_without_hot = true;  // then a hot table must hold 25%
  EXPECT_EQ(choose_hot(in).pick, HotChoice::Pick::none);
  EXPECT_EQ(choose_hot(in).keys, 0u);
  h[2] = 1000;  // 2% < 3%
  EXPECT_EQ(choose_hot(counted(h, 91000, 92000, 1000, 0.1)).pick, HotChoice::Pick::none);
}

TEST(HashGroupByPlan, SortWhenTheLastBinHoldsMoreThanWanted) {
  auto h = empty_hist();
  h[1] = 10000;
  h[tuning::kBins - 1] = 600;
  const std::uint64_t big = 600ull * 5000, sampled = big + 10000;
  auto in = counted(h, 10600, sampled, 500, 0.1);
  in.big_pairs = big;
  const HotChoice c = choose_hot(in);
  ASSERT_EQ(c.pick, HotChoice::Pick::sort);
  EXPECT_EQ(c.keys, 500u);
  EXPECT_DOUBLE_EQ(c.share, double(big) * 500 / 600 / double(sampled));  // the last bin's average key
}

TEST(HashGroupByPlan, PartitionTierLayoutBesideTheHotTable) {
  ColdTier c{100000000, 1000000, 1e6, 512, 4, std::size_t{70} << 30, 227 * 1024};
  const auto in = partition_inputs(c, 1000, 0.25, 50);
  EXPECT_EQ(in.cold_pairs, std::uint64_t(99000000 * 0.75));
  EXPECT_EQ(in.cold_distinct, 999000.0);
  EXPECT_DOUBLE_EQ(in.max_cold_share, 50.0 / 1000000);
  EXPECT_EQ(in.tile_keys, 8192u);  // 4 vectors of 4 u32 keys per thread
  EXPECT_EQ(in.shared_max, 64u * 1024);
  c.key_bytes = 8;
  EXPECT_EQ(partition_inputs(c, 0, 0, 50).tile_keys, 4096u);
  EXPECT_EQ(partition_inputs(c, 0, 1.5, 50).cold_pairs, 0u);
  EXPECT_EQ(partition_inputs(c, 2000000, 0, 50).cold_distinct, 1.0);
  EXPECT_EQ(part_tile_bytes(8192, 512, 4), 32768u + (3 * 512 + 33) * 4);
  const PartitionLayout alone = partition_layout(in, 0, 227 * 1024);
  ASSERT_TRUE(alone.plan.use) << alone.plan.why;
  EXPECT_EQ(alone.offset, 0u);
  const PartitionLayout beside = partition_layout(in, 49124, 227 * 1024);
  EXPECT_EQ(beside.offset, 49136u);  // 16-byte aligned after the hot table
  EXPECT_EQ(beside.bytes, 49136u + part_tile_bytes(in.tile_keys, beside.plan.partitions, 4));
  const PartitionLayout tight = partition_layout(in, 49124, beside.bytes - 1);
  EXPECT_FALSE(tight.plan.use);
  EXPECT_NE(tight.plan.why.find("shared memory"), std::string::npos);
  EXPECT_TRUE(partition_layout(in, 49124, beside.bytes).plan.use);
  EXPECT_EQ(partition_reduce_bytes(4096, 4), 4096u * 8);
}

TEST(HashGroupByPlan, PassModeAndGrid) {
  EXPECT_EQ(pass_mode(false, true, true, true), kGlobal);
  EXPECT_EQ(pass_mode(true, true, true, true), kHotTwoChoice);
  EXPECT_EQ(pass_mode(true, false, true, true), kHotBucketsMatch);
  EXPECT_EQ(pass_mode(true, false, true, false), kHotMatch);
  EXPECT_EQ(pass_mode(true, false, false, true), kHotBuckets);
  EXPECT_EQ(pass_mode(true, false, false, false), kHot);
  EXPECT_EQ(main_grid(7, 132, 2, 4), 7);  // given blocks
  EXPECT_EQ(main_grid(0, 132, 2, 4), 264);
  EXPECT_EQ(main_grid(0, 132, 8, 4), 528);
  EXPECT_EQ(main_grid(0, 132, 0, 4), 132);  // at least one block per SM
}

TEST(HashGroupByTuning, ClassesCandidatesAndCheckedEntries) {
  const std::uint64_t m = tuning::kClassSample;
  EXPECT_EQ(tuning::cardinality_class(1024, m), 0);
  EXPECT_EQ(tuning::cardinality_class(1025, m), 1);
  EXPECT_EQ(tuning::cardinality_class(8191, m), 1);
  EXPECT_EQ(tuning::cardinality_class(8192, m), 2);
  EXPECT_EQ(tuning::cardinality_class(32767, m), 2);
  EXPECT_EQ(tuning::cardinality_class(32768, m), 3);
  EXPECT_EQ(tuning::problem_class(4, 8, 1u << 27, 1, true).find("k4v8/"), 0u);
  const auto counts = tuning::candidates(true, Options{}, 1);
  EXPECT_EQ(counts.size(), 17u);  // 7 + warp match 2 + no partitions 4 + linear / larger tables 4
  EXPECT_EQ(tuning::candidates(false, Options{}, 0).size(), 9u);  // 7 + small samples 2
  Options off;
  off.warp_match = off.partition_cold = off.hot_buckets = false;
  EXPECT_EQ(tuning::candidates(true, off, 2).size(), 7u);
  for (const auto& c : counts) {
    const HashPlan p = tuning::checked_plan(HashPlan{}, c.params);
    EXPECT_EQ(p.label(), c.label);
  }
  nlohmann::json bad = counts[0].params;
  bad["N"] = 48;  // not whole warps
  EXPECT_THROW(tuning::checked_plan(HashPlan{}, bad), std::out_of_range);
  bad = counts[0].params;
  bad["tf"] = 0.5;
  EXPECT_THROW(tuning::checked_plan(HashPlan{}, bad), std::out_of_range);
  bad = counts[0].params;
  bad["p"] = 0.6;
  EXPECT_THROW(tuning::checked_plan(HashPlan{}, bad), std::out_of_range);
}
