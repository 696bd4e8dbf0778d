// The partitioned cold tier of the hash group-by (counts): how many hash partitions, how much room
// each gets, how large a shared table reduces one. Pure code, tested on the CPU.
//
// The main pass sorts each tile's cold keys (those not in the hot table) by partition in shared
// memory and appends them to per-partition regions in whole runs; a second kernel reduces each
// partition in a shared-memory table and adds each distinct key to the global table once. That
// trades ~2 scattered L2 transactions per cold key (slot read + atomic) for coalesced writes and
// one more read of the cold keys.
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

namespace tandem::hash_groupby::partition_plan {

struct Inputs {
  std::uint64_t cold_pairs{0};    // records expected to miss the hot table (main pass)
  double cold_distinct{0};        // distinct keys expected among them
  double max_cold_share{0};       // largest share of the records one cold key may hold
  std::uint32_t threads{512};     // main-pass block size (partitions <= threads: one scan lane each)
  std::uint32_t tile_keys{8192};  // keys per main-pass tile
  std::uint32_t key_bytes{4};
  std::size_t free_bytes{0};  // device memory free for the partition buffer
  std::size_t shared_max{0};  // shared bytes one reduce block may take
};

struct Plan {
  bool use{false};
  std::string why;              // why not, when not
  std::uint32_t partitions{0};  // P, a power of two
  std::uint32_t bits{0};        // log2 P: partition = top bits of the key's 32-bit hash
  std::uint64_t capacity{0};    // keys per partition region (a multiple of 4)
  std::uint32_t slots{0};       // reduce kernel's shared table slots
  std::size_t buffer_bytes{0};
};

// Distinct keys one partition should hold: a shared table of twice that (keys + u32 counts,
// 8 bytes a slot for u32 keys) stays at 32 KiB, so several reduce blocks share an SM.
inline constexpr double kDistinctPerPartition = 2048;
inline constexpr std::uint64_t kMinColdPairs = std::uint64_t{1} << 20;

inline Plan plan(const Inputs& in) {
  Plan p;
  if (in.cold_pairs < kMinColdPairs) {
    p.why = "fewer than 2^20 cold records";
    return p;
  }
  const std::uint32_t max_p = std::min<std::uint32_t>(1024, std::bit_floor(std::max<std::uint32_t>(in.threads, 32)));
  std::uint32_t P =
      std::bit_ceil(static_cast<std::uint32_t>(std::clamp(in.cold_distinct / kDistinctPerPartition, 1.0, 1e9)));
  P = std::clamp<std::uint32_t>(P, 32, max_p);
  const double per = double(in.cold_pairs) / P;
  // One partition's keys are reduced by one block: a cold key heavier than half a partition
  // would leave that block alone long after the rest (skew without a hot table).
  if (in.max_cold_share * double(in.cold_pairs) > per / 2) {
    p.why = "a cold key too heavy for one partition";
    return p;
  }
  const double dpp = std::max(1.0, in.cold_distinct / P);
  // room: 1/8 more than the mean, plus two tiles (a tile's run may land past the mean)
  std::uint64_t cap = static_cast<std::uint64_t>(per * 1.125) + 2ull * in.tile_keys;
  cap = (cap + 3) / 4 * 4;
  const std::size_t bytes = std::size_t(P) * cap * in.key_bytes;
  if (bytes > in.free_bytes / 2) {
    p.why = "the partition buffer would take more than half the free device memory";
    return p;
  }
  const std::size_t slot_bytes = in.key_bytes + 4;
  std::uint64_t slots = std::max<std::uint64_t>(256, static_cast<std::uint64_t>(2.5 * dpp) + 64);
  slots = std::min<std::uint64_t>(slots, in.shared_max > 64 ? (in.shared_max - 64) / slot_bytes : 0);
  slots = slots / 4 * 4;  // whole buckets of 4 (bucket_table.hpp)
  if (slots < 256) {
    p.why = "too little shared memory for a partition table";
    return p;
  }
  p.use = true;
  p.partitions = P;
  p.bits = static_cast<std::uint32_t>(std::countr_zero(P));
  p.capacity = cap;
  p.slots = static_cast<std::uint32_t>(slots);
  p.buffer_bytes = bytes;
  return p;
}

}  // namespace tandem::hash_groupby::partition_plan
