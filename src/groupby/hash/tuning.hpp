// The hash group-by's tuning: every measured or chosen constant, grouped by what it decides, and
// the candidate plans the tuner times on the first large job of a problem class (Tuner +
// TuningCache, op "mapreduce.hash"). Plain C++ (tested on the CPU with the plan).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "groupby/hash/types.hpp"
#include "tandem/core/tune.hpp"

namespace tandem::hash_groupby {
struct HashPlan;
}

namespace tandem::hash_groupby::tuning {

// ---- the untuned plan (HashPlan's defaults) -------------------------------------------------------
inline constexpr int kThreads = 512, kBlocksPerSm = 4;
inline constexpr double kSampleFraction = 0.01, kHotFraction = 0.10;
inline constexpr std::size_t kSharedBudget = 48 * 1024;  // shared bytes per block for the hot table
inline constexpr double kTableFactor = 3.0;              // global table slots per estimated key

// ---- sampling pass ---------------------------------------------------------------------------------
inline constexpr std::uint64_t kMinSample = 4096;  // records: a smaller input is sampled whole
// Small dynamic shared tables (256 keys per block): heavy hitters of the sample stay in shared
// memory; each block flushes at most 256 keys.
inline constexpr std::uint32_t kSampleSharedKeys = 256, kSampleSharedSlots = 2 * kSampleSharedKeys;
inline constexpr int kSampleThreads = 512, kSampleBlocksPerSm = 4;          // with the shared table
inline constexpr int kSampleThreadsCold = 256, kSampleBlocksPerSmCold = 8;  // hot keys off
// Histogram of the sampled counts: bin c holds the keys seen c times, the last bin those seen more.
inline constexpr std::uint32_t kBins = 4096;
// Keys holding >= 1/16 of the sample ("top" keys, at most 8) are combined per warp with a ballot.
inline constexpr std::uint64_t kTopShareDivisor = 16;
inline constexpr std::uint32_t kTopKeys = 8;

// ---- global table ----------------------------------------------------------------------------------
// The global table may take this share of the L2 cache when the sample cannot rule out that many
// keys (distinct_estimate.hpp). H100, Zipf 1.0 over 1M keys: 3.3M slots (half the L2) against 1.9M
// (Chao1): main pass 1.35 vs 1.41 ms.
inline constexpr double kTableL2Share = 0.5;
inline constexpr std::uint64_t kTableSlack = 1024;         // slots added to the estimate
inline constexpr std::uint64_t kMaxSlots = 0x7fffffffull;  // slot indices stay below 2^31
inline constexpr std::uint32_t kProbeLimit = 512;          // probes before an insert goes to the overflow list
// Overflow list: M / 32 entries within [4096, 2^24]; a retry makes table and list 4x larger.
inline constexpr std::uint64_t kOverflowDivisor = 32, kMinOverflow = 4096, kMaxOverflow = 1u << 24;
inline constexpr std::uint64_t kMaxOverflowGiven = 1u << 30;
inline constexpr std::uint64_t kRetryGrowth = 4;
inline constexpr int kMaxRetries = 12;

// ---- hot keys --------------------------------------------------------------------------------------
// Below this share of the sample the hot keys do not pay for a shared table.
inline constexpr double kMinHotShare = 0.03;
// With the partitioned cold tier available, a hot table must hold this much of the sample: every
// cold key pays a shared-table probe (H100, Zipf 0.5: 6% hot, main pass 2.28 ms against 0.83 ms
// without the table).
inline constexpr double kMinHotSharePartitioned = 0.25;
inline constexpr std::uint32_t kTwoChoiceMax = 1024;  // most hot keys placed by two-choice hashing
inline constexpr std::uint32_t kTwoChoiceMinSlots = 64;
inline constexpr std::uint32_t kTwoChoiceSlotsPerKey = 4;  // at most a quarter full
inline constexpr std::size_t kSharedReserve = 1024;        // shared bytes left to the kernel's own variables

// ---- partitioned cold tier (counts; partition_plan.hpp decides whether and how many) ---------------
inline constexpr unsigned kPartVecs = 4;  // 16-byte vectors per thread in a tile
inline constexpr int kPartitionReduceThreads = 512;
inline constexpr std::size_t kPartitionSharedMax = 64 * 1024;  // shared bytes of one reduce block

// ---- launch shapes of the helper kernels -----------------------------------------------------------
inline constexpr std::uint64_t kGridCap = 4096;  // grid-stride kernels loop over the rest
inline constexpr int kHelperThreads = 256;
inline constexpr unsigned kCompactThreads = 256, kCompactItems = 4;  // block size, slots per thread and round
inline constexpr std::uint64_t kCompactTile = std::uint64_t(kCompactThreads) * kCompactItems;

// ---- the tuner -------------------------------------------------------------------------------------
// Cardinality of a small sample (the first 2^16 records) for the problem class: 0 (at most 1,024
// distinct keys) ... 3 (more than half the records distinct).
inline constexpr std::uint64_t kClassSample = std::uint64_t{1} << 16;
int cardinality_class(std::uint64_t distinct, std::uint64_t sampled);
// The problem class: key and accumulator widths, size class, cardinality, hot keys on or off.
std::string problem_class(std::size_t key_bytes, std::size_t acc_bytes, std::uint64_t records, int card, bool hot_keys);
// The plans timed for a problem class (counts get the warp-match and partition variants).
std::vector<Candidate> candidates(bool count, const Options& o, int card);
// A candidate's or cache entry's plan, on top of `base` (throws std::out_of_range when a value is
// out of range, so the cache drops the entry).
HashPlan plan_from_params(const HashPlan& base, const nlohmann::json& j);
HashPlan checked_plan(const HashPlan& base, const nlohmann::json& j);

}  // namespace tandem::hash_groupby::tuning
