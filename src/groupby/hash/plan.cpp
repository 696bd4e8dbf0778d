#include "groupby/hash/plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "groupby/hash/bucket_table.hpp"
#include "tandem/core/error.hpp"

namespace tandem::hash_groupby {

std::string HashPlan::label() const {
  return fmt::format("N={} blocks/SM={} p={} hot={} smem={}K table={}x{}{}{}", threads, blocks_per_sm, p, hot_fraction,
                     smem_budget / 1024, table_factor, warp_match ? "" : " no match", partition ? "" : " no partitions",
                     buckets ? "" : " linear probing");
}

HashPlan plan_from(const Options& o) {
  HashPlan pl;
  if (o.block_threads > 0) pl.threads = std::clamp((o.block_threads + 31) / 32 * 32, 32, 1024);
  if (o.sample_fraction >= 0) pl.p = std::min(o.sample_fraction, 0.5);
  if (o.hot_fraction >= 0) pl.hot_fraction = std::min(o.hot_fraction, 1.0);
  pl.hot = o.hot_keys;
  pl.table_entries = o.result_entries;
  pl.overflow_cap = static_cast<std::uint32_t>(std::min<std::size_t>(o.spill_entries, tuning::kMaxOverflowGiven));
  if (o.shared_entries) pl.smem_budget = 0;  // sized from shared_entries
  return pl;
}

bool options_fix_plan(const Options& o) {
  return o.block_threads > 0 || o.blocks > 0 || o.sample_fraction >= 0 || o.hot_fraction >= 0 || o.shared_entries ||
         o.result_entries || o.spill_entries;
}

HashPlan plan_after_overflow(HashPlan pl, std::uint64_t table_slots, std::uint64_t overflow_entries) {
  pl.table_entries = std::max<std::uint64_t>(table_slots, 16) * tuning::kRetryGrowth;
  pl.overflow_cap = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(overflow_entries * tuning::kRetryGrowth, tuning::kMaxOverflowGiven));
  return pl;
}

std::uint64_t sample_records(std::uint64_t records, double p) {
  if (records <= tuning::kMinSample) return records;
  return std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(double(records) * p)), tuning::kMinSample,
                                   records);
}

std::uint32_t sample_slots(std::uint64_t sampled) { return static_cast<std::uint32_t>(2 * sampled + 16); }

std::uint64_t top_min_count(std::uint64_t sampled) {
  return std::max<std::uint64_t>(2, sampled / tuning::kTopShareDivisor);
}

std::uint32_t overflow_capacity(const HashPlan& pl, std::uint64_t records) {
  if (pl.overflow_cap) return pl.overflow_cap;
  return static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(records / tuning::kOverflowDivisor, tuning::kMinOverflow, tuning::kMaxOverflow));
}

double l2_keys(std::size_t l2_bytes, double table_factor, std::size_t slot_bytes) {
  return tuning::kTableL2Share * double(l2_bytes) / (table_factor * double(slot_bytes));
}

std::uint32_t table_slots(const HashPlan& pl, double distinct_estimate) {
  const std::uint64_t want =
      pl.table_entries ? pl.table_entries
                       : static_cast<std::uint64_t>(pl.table_factor * distinct_estimate) + tuning::kTableSlack;
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(want, 2, tuning::kMaxSlots));
}

std::uint32_t probe_limit(std::uint32_t slots) { return std::min<std::uint32_t>(slots, tuning::kProbeLimit); }

std::uint32_t grown_slots(std::uint32_t groups, std::uint32_t overflowed, std::uint32_t slots) {
  const std::uint64_t need = 2 * (std::uint64_t(groups) + overflowed) + tuning::kTableSlack;
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(std::max<std::uint64_t>(need, std::uint64_t(slots) * 2), tuning::kMaxSlots));
}

int compact_grid(std::uint64_t slots) {
  return static_cast<int>(
      std::clamp<std::uint64_t>((slots + tuning::kCompactTile) / tuning::kCompactTile, 1, tuning::kGridCap));
}

double cold_max_count(std::span<const std::uint32_t> hist, std::uint64_t big_pairs) {
  const std::size_t last = hist.size() - 1;
  for (std::size_t b = last; b > 0; --b)
    if (hist[b]) return b == last ? double(big_pairs) : double(b);
  return 0;
}

std::size_t shared_budget(const HashPlan& pl, std::size_t optin) {
  return pl.smem_budget ? std::min<std::size_t>(pl.smem_budget, optin - tuning::kSharedReserve) : 0;
}

std::uint32_t hot_capacity(const HotInputs& in) {
  if (!in.budget) return static_cast<std::uint32_t>(in.shared_entries);
  const std::uint32_t smax =
      static_cast<std::uint32_t>((in.budget - 16 - in.acc_bytes) / (in.key_bytes + in.acc_bytes));
  return in.buckets ? buckets::capacity(smax) : smax / 2;
}

namespace {

// The threshold for `want` hot keys out of the histogram: keys seen more than t times, then those
// seen exactly t times. No sort unless more than `want` keys share the last bin.
HotChoice threshold_for(const HotInputs& in, std::uint32_t want) {
  const auto& hh = in.hist;
  const std::uint32_t last = static_cast<std::uint32_t>(hh.size() - 1);
  HotChoice c;
  std::uint64_t above = 0, pairs = 0;
  std::uint32_t t = last;
  if (hh[last] < want) {
    above = hh[last];
    pairs = in.big_pairs;
    for (t = last - 1; t > 1; --t) {
      if (above + hh[t] >= want) break;
      above += hh[t];
      pairs += std::uint64_t(hh[t]) * t;
    }
    // t == 1 here means: every key seen more than once is in, the rest from those seen once
  }
  if (t == last) {  // more than `want` keys in the last bin: the engine sorts the counts
    c.pick = HotChoice::Pick::sort;
    c.keys = want;
    // the average key of the last bin
    c.share = double(in.big_pairs) * want / std::max<double>(1, hh[last]) / double(in.sampled);
    return c;
  }
  const std::uint32_t need_eq = static_cast<std::uint32_t>(std::min<std::uint64_t>(want - above, hh[t]));
  want = static_cast<std::uint32_t>(above + need_eq);
  pairs += std::uint64_t(need_eq) * t;
  c.share = double(pairs) / double(in.sampled);
  const double min_share = in.partitioned_without_hot ? tuning::kMinHotSharePartitioned : tuning::kMinHotShare;
  if (c.share >= min_share && want) {
    c.pick = HotChoice::Pick::threshold;
    c.keys = want;
    c.count = t;
    c.above = static_cast<std::uint32_t>(above);
    c.equal = need_eq;
  }
  return c;  // else the hot keys hold too little of the sample: no shared table
}

}  // namespace

HotChoice choose_hot(const HotInputs& in) {
  const std::uint32_t cap = hot_capacity(in);
  if (in.distinct <= cap) {
    HotChoice c;
    c.pick = in.distinct ? HotChoice::Pick::all : HotChoice::Pick::none;
    c.keys = in.distinct;
    c.share = 1.0;
    return c;
  }
  const std::uint32_t want =
      std::min<std::uint32_t>(cap, static_cast<std::uint32_t>(std::ceil(in.hot_fraction * in.distinct)));
  if (!want) return {};
  return threshold_for(in, want);
}

std::size_t hot_table_bytes(std::uint32_t slots, std::uint32_t copies, std::size_t key_bytes, std::size_t acc_bytes) {
  return shared_acc_offset(slots, key_bytes) + std::size_t(copies) * (slots + 1) * acc_bytes;
}

std::uint32_t two_choice_slots(std::uint32_t keys) {
  return std::max<std::uint32_t>(tuning::kTwoChoiceMinSlots, tuning::kTwoChoiceSlotsPerKey * keys);
}

std::uint32_t hot_slots(std::uint32_t hot, std::uint32_t two_choice_slots, bool buckets) {
  if (two_choice_slots) return two_choice_slots;
  if (buckets) return buckets::kWays * buckets::buckets_for(hot);
  return 2 * hot + 1;
}

SharedLayout hot_layout(std::uint32_t slots, int threads, std::size_t budget, std::size_t optin, std::size_t key_bytes,
                        std::size_t acc_bytes) {
  SharedLayout l;
  l.slots = slots;
  const std::uint32_t warps = std::uint32_t(threads / 32);
  const std::size_t cap_bytes = budget ? budget : hot_table_bytes(slots, 1, key_bytes, acc_bytes);
  while (l.copies * 2 <= warps && hot_table_bytes(slots, l.copies * 2, key_bytes, acc_bytes) <= cap_bytes)
    l.copies *= 2;
  l.bytes = hot_table_bytes(slots, l.copies, key_bytes, acc_bytes);
  if (l.bytes > optin)
    throw UsageError(
        fmt::format("hot table of {} slots needs {} bytes of shared memory; the GPU has {}", slots, l.bytes, optin));
  return l;
}

partition_plan::Inputs partition_inputs(const ColdTier& c, std::uint32_t hot, double hot_share, double max_count) {
  partition_plan::Inputs in;
  in.cold_pairs = static_cast<std::uint64_t>(double(c.records - c.sampled) * std::max(0.0, 1.0 - hot_share));
  in.cold_distinct = std::max(1.0, c.distinct_estimate - hot);
  in.max_cold_share = max_count / double(c.sampled);
  in.threads = static_cast<std::uint32_t>(c.threads);
  in.tile_keys =
      tuning::kPartVecs * static_cast<std::uint32_t>(16 / c.key_bytes) * static_cast<std::uint32_t>(c.threads);
  in.key_bytes = static_cast<std::uint32_t>(c.key_bytes);
  in.free_bytes = c.free_bytes;
  in.shared_max = std::min<std::size_t>(c.optin, tuning::kPartitionSharedMax);
  return in;
}

PartitionLayout partition_layout(const partition_plan::Inputs& in, std::size_t hot_bytes, std::size_t optin) {
  PartitionLayout l;
  l.plan = partition_plan::plan(in);
  l.offset = (hot_bytes + 15) & ~std::size_t(15);
  l.bytes = l.offset + part_tile_bytes(in.tile_keys, l.plan.partitions, in.key_bytes);
  if (l.plan.use && l.bytes > optin) {
    l.plan.use = false;
    l.plan.why = "the tile buffer does not fit in shared memory beside the hot table";
  }
  return l;
}

std::size_t partition_reduce_bytes(std::uint32_t slots, std::size_t key_bytes) {
  return shared_acc_offset(slots, key_bytes) + std::size_t(slots) * sizeof(std::uint32_t);
}

PassMode pass_mode(bool hot, bool two_choice, bool match, bool buckets) {
  if (!hot) return kGlobal;
  if (two_choice) return kHotTwoChoice;
  if (match) return buckets ? kHotBucketsMatch : kHotMatch;
  return buckets ? kHotBuckets : kHot;
}

int main_grid(int blocks_option, int sms, int per_sm, int blocks_per_sm) {
  return blocks_option > 0 ? blocks_option : sms * std::max(1, std::min(per_sm, blocks_per_sm));
}

}  // namespace tandem::hash_groupby
