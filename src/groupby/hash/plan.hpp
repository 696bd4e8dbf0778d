// The hash group-by's plan: every size, threshold and layout the engine (engine.cu) decides on the
// host, as plain functions of the inputs, the options, the device's properties and what the
// sampling pass saw. Plain C++ (no CUDA), tested on the CPU (tests/test_hash_groupby_plan.cpp).
//
// The passes they size: (1) a sampling pass over the first p% of the records into a sample table,
// compacted with a histogram of the sampled counts; (2) a global table of table_factor x the
// distinct estimate; (3) the hot keys (all sampled keys when they fit in shared memory, else the
// top ones by a count threshold read off the histogram) and the shared-memory layout of their
// table; (4) the main pass, optionally with the partitioned cold tier (partition_plan.hpp);
// (5) the compact, and a grow or a retry when the table overflowed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "groupby/hash/partition_plan.hpp"
#include "groupby/hash/tuning.hpp"
#include "groupby/hash/types.hpp"
#include "tandem/cuda/hd.hpp"

namespace tandem::hash_groupby {

// What the plan needs of the device, read once per device (context.hpp).
struct DeviceProps {
  int id{-1}, sms{0};
  std::size_t optin{0};  // shared bytes one block may opt into
  std::size_t l2{0};     // L2 cache bytes
};

struct HashPlan {
  int threads{tuning::kThreads};
  int blocks_per_sm{tuning::kBlocksPerSm};
  double p{tuning::kSampleFraction};
  double hot_fraction{tuning::kHotFraction};
  std::size_t smem_budget{tuning::kSharedBudget};  // shared bytes per block for the hot table (0: shared_entries)
  std::uint64_t table_entries{0};                  // 0: table_factor x the distinct estimate
  double table_factor{tuning::kTableFactor};
  std::uint32_t overflow_cap{0};  // 0: from the input size
  bool hot{true};
  bool warp_match{true};  // kHotMatch where it applies (Options::warp_match allowing)
  bool partition{true};   // the partitioned cold tier where it applies (Options::partition_cold allowing)
  bool buckets{true};     // a bucketed two-choice hot table (Options::hot_buckets allowing)
  std::string label() const;
};

// The plan from the options alone (no tuning).
HashPlan plan_from(const Options& o);
// True when the options fix a part of the plan: then it is not tuned.
bool options_fix_plan(const Options& o);
// The plan of the next whole-job retry after the overflow list filled: table and list 4x larger.
HashPlan plan_after_overflow(HashPlan pl, std::uint64_t table_slots, std::uint64_t overflow_entries);

// ---- sampling pass and global table ------------------------------------------------------------------
std::uint64_t sample_records(std::uint64_t records, double p);
// Slots of the sample table: twice the sampled records, so it never overflows.
std::uint32_t sample_slots(std::uint64_t sampled);
// Sampled count from which a key is a "top" key, combined per warp in the main pass.
std::uint64_t top_min_count(std::uint64_t sampled);
std::uint32_t overflow_capacity(const HashPlan& pl, std::uint64_t records);
// Keys that fit in the planned share of the L2 cache (distinct_estimate::estimate's `cheap_keys`).
double l2_keys(std::size_t l2_bytes, double table_factor, std::size_t slot_bytes);
std::uint32_t table_slots(const HashPlan& pl, double distinct_estimate);
std::uint32_t probe_limit(std::uint32_t slots);
// Slots of the table a grow merges everything into: twice what it holds, at least twice `slots`.
std::uint32_t grown_slots(std::uint32_t groups, std::uint32_t overflowed, std::uint32_t slots);
// Blocks of a compact over `slots` slots and the empty marker's slot.
int compact_grid(std::uint64_t slots);

// ---- hot keys --------------------------------------------------------------------------------------
// The largest sampled count a key outside the hot table may have with no hot keys: the highest
// histogram bin in use (bin kBins - 1: bounded by its pairs' sum). 0 for an empty histogram.
double cold_max_count(std::span<const std::uint32_t> hist, std::uint64_t big_pairs);

// How many hot keys the shared table may hold, and which ones.
struct HotInputs {
  std::uint32_t distinct{0};  // sampled distinct keys
  std::uint64_t sampled{0};   // sampled records
  std::span<const std::uint32_t> hist;
  std::uint64_t big_pairs{0};           // sampled pairs of keys in the last bin
  std::size_t budget{0};                // shared bytes for the table (0: `shared_entries` keys)
  std::size_t shared_entries{0};        // Options::shared_entries
  bool buckets{true};                   // bucketed two-choice table (else linear probing at half load)
  double hot_fraction{0.1};             // of the sampled distinct keys, when not all fit
  bool partitioned_without_hot{false};  // the cold tier would be used without hot keys
  std::size_t key_bytes{4}, acc_bytes{4};
};
struct HotChoice {
  enum class Pick { none, all, sort, threshold };
  Pick pick{Pick::none};
  std::uint32_t keys{0};  // H
  double share{0};        // share of the sample they hold (estimated for `sort`)
  // Pick::threshold: every key seen more than `count` times (`above` of them) and `equal` of those
  // seen exactly `count` times.
  std::uint32_t count{0}, above{0}, equal{0};
};
// Shared bytes a block gets for the hot table (0: sized from Options::shared_entries).
std::size_t shared_budget(const HashPlan& pl, std::size_t optin);
std::uint32_t hot_capacity(const HotInputs& in);
HotChoice choose_hot(const HotInputs& in);

// Shared memory of the main pass: keys[S] (rounded up to 16 bytes), then C copies of S + 1
// accumulators (slot S: the all-ones key).
TANDEM_HD constexpr std::size_t shared_acc_offset(std::uint32_t slots, std::size_t key_bytes) {
  return (std::size_t(slots) * key_bytes + 15) & ~std::size_t(15);
}
std::size_t hot_table_bytes(std::uint32_t slots, std::uint32_t copies, std::size_t key_bytes, std::size_t acc_bytes);
// Slots of a hot table of H keys: two-choice (placed on the host in `two_choice_slots`, 0: not),
// bucketed, or linear probing at half load.
std::uint32_t hot_slots(std::uint32_t hot, std::uint32_t two_choice_slots, bool buckets);
std::uint32_t two_choice_slots(std::uint32_t keys);
struct SharedLayout {
  std::uint32_t slots{0}, copies{1};
  std::size_t bytes{0};
};
// Copies: the most powers of two up to one per warp that fit in the budget (or one copy when the
// budget is 0). Throws UsageError when the table exceeds what a block may have.
SharedLayout hot_layout(std::uint32_t slots, int threads, std::size_t budget, std::size_t optin, std::size_t key_bytes,
                        std::size_t acc_bytes);

// ---- partitioned cold tier -------------------------------------------------------------------------
struct ColdTier {
  std::uint64_t records{0}, sampled{0};
  double distinct_estimate{0};
  int threads{512};
  std::size_t key_bytes{4};
  std::size_t free_bytes{0};  // device memory free, with the tier's own buffer
  std::size_t optin{0};
};
partition_plan::Inputs partition_inputs(const ColdTier& c, std::uint32_t hot, double hot_share, double max_count);
TANDEM_HD constexpr std::size_t part_tile_bytes(std::uint32_t tile_keys, std::uint32_t partitions,
                                                std::size_t key_bytes) {
  return std::size_t(tile_keys) * key_bytes + (3 * std::size_t(partitions) + 1 + 32) * sizeof(std::uint32_t);
}
// The partition plan beside a hot table of `hot_bytes`: the tile buffer starts at `offset`, the
// pass takes `bytes`; unused when it does not fit in `optin`.
struct PartitionLayout {
  partition_plan::Plan plan;
  std::size_t offset{0}, bytes{0};
};
PartitionLayout partition_layout(const partition_plan::Inputs& in, std::size_t hot_bytes, std::size_t optin);
std::size_t partition_reduce_bytes(std::uint32_t slots, std::size_t key_bytes);

// ---- main pass -------------------------------------------------------------------------------------
PassMode pass_mode(bool hot, bool two_choice, bool match, bool buckets);
int main_grid(int blocks_option, int sms, int per_sm, int blocks_per_sm);

}  // namespace tandem::hash_groupby
