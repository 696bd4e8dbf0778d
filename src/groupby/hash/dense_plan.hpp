// The dense-range path of the hash group-by: integer keys whose range R = max - min + 1 is small
// are reduced into direct-indexed accumulators (slot = key - min) instead of a hash table. Pure
// code, tested on the CPU (tests/test_dense_groupby_plan.cpp); dense_engine.cu runs the passes.
//
// The passes: (1) min/max of the keys; (2) when R fits one block's shared accumulators, every
// block reduces its slice of the input straight into them ("direct"); else a partition pass
// writes each record's low bits (u16) and value to the region of its partition, the high bits of
// key - min (a radix-sort scatter through shared memory); (3) each partition is reduced by one or
// more blocks into shared accumulators indexed by the low bits, then added into a global table of
// R accumulators; (4) the occupied slots are emitted in key order (no sort afterwards).
//
// Regions are sized speculatively for keys spread evenly over the range; when a region overflows
// (skewed keys) the partition pass has counted every partition exactly, so it runs once more into
// regions of exactly that size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::hash_groupby::dense {

inline constexpr std::size_t kSharedBytes = 64 * 1024;  // shared accumulators of one block (3 per SM)
inline constexpr std::uint32_t kMaxPartitions = 1024;   // partition pass: block-local histogram and scan
inline constexpr std::uint64_t kRangePerRecord = 1;     // R <= records (+ one block's slots): table not mostly empty
inline constexpr double kRegionSlack = 1.125;           // speculative region: even share x this
inline constexpr std::uint64_t kRegionExtra = 256;      // ... plus this many records
inline constexpr std::uint64_t kRegionAlign = 8;        // records: regions start 16-byte aligned (u16 low bits)
inline constexpr std::uint64_t kMinChunkSlots = 4;      // a reduce block reduces at least 4 x its slots' records
inline constexpr int kThreads = 512;                    // partition pass and reduce blocks
inline constexpr std::uint64_t kSampleFrom = std::uint64_t{1} << 20;  // larger inputs: a sampled range check first
inline constexpr std::uint32_t kSampleRecords = 1u << 16;

struct Inputs {
  std::uint64_t records{0};
  std::uint64_t min{0}, max{0};     // of the keys (min <= max)
  std::size_t shared_acc_bytes{4};  // one shared accumulator (u32 count, or the aggregate)
  std::size_t acc_bytes{8};         // one global accumulator
  std::size_t value_bytes{0};       // 0: counts
  std::size_t free_bytes{0};        // device memory free for the table and the partition buffer
};

struct Plan {
  bool use{false};
  std::string why;              // why not, when not
  std::uint64_t range{0};       // R (0: 2^64)
  std::uint32_t slots{0};       // S: shared accumulators per block, a power of two
  std::uint32_t shift{0};       // log2 S: partition = (key - min) >> shift
  std::uint32_t partitions{0};  // P = ceil(R / S); 0: direct (R <= S, no partition pass)
  std::uint64_t region{0};      // speculative records per partition region (a multiple of kRegionAlign)
  std::size_t table_bytes{0};   // R global accumulators
  std::size_t buffer_bytes{0};  // the partition buffer (u16 low bits + values)
};

// max - min + 1, or 0 when that is 2^64.
std::uint64_t key_range(std::uint64_t min, std::uint64_t max);
// Shared accumulators per block: the largest power of two whose accumulators fit kSharedBytes.
std::uint32_t block_slots(std::size_t shared_acc_bytes);
Plan plan(const Inputs& in);
// Records per partition region when the pass counted exactly n (rounded up to kRegionAlign).
std::uint64_t exact_region(std::uint64_t n);
// Records one reduce block takes: the input spread over `target_blocks`, at least
// kMinChunkSlots x S (its shared table's set-up and flush stay a small part of its work); a
// multiple of kRegionAlign.
std::uint64_t reduce_chunk(std::uint64_t records, int target_blocks, std::uint32_t slots);
// Blocks of the reduce: an upper bound of the chunks over all partitions (direct: of the input).
std::uint64_t reduce_blocks(std::uint64_t records, std::uint64_t chunk, std::uint32_t partitions);
// Whether a range of R keys (0: 2^64) suits the dense path: at most kMaxPartitions x S keys, and
// no more than one block's slots or kRangePerRecord x the records. Monotone in R: a sample's range
// that does not fit rules the whole input out.
bool range_fits(std::uint64_t range, std::uint64_t records, std::size_t shared_acc_bytes);

}  // namespace tandem::hash_groupby::dense
