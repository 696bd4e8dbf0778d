// Sizes of the hash group-by's partitioned cold tier (pure code, tested on the CPU).
//
// Keys that miss the shared hot table are not reduced with L2 atomics one pair at a time: the main
// pass appends each to a region of a partition buffer (partition = the top bits of the key's hash,
// one region per partition and producing block, so no global atomics), and a second pass reduces
// one partition per block in a shared-memory table, then writes each of its distinct keys to the
// global table once. Traffic: the cold keys written and read once (coalesced), instead of a slot
// read plus an atomic at L2 for every cold pair.
//
// Nothing depends on these estimates for correctness: a pair whose region is full, or whose
// partition's shared table is full, goes to the global table directly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace tandem::mr::partition_plan {

// Shared table of the second pass: `slots` key + accumulator pairs within `bytes` (one spare
// accumulator, 16-byte alignment); it takes at most half of them as keys (probe loops stay short).
struct Table {
  std::uint32_t slots{0};
  std::uint32_t max_keys{0};
};
inline Table table_for(std::size_t bytes, std::size_t key_bytes, std::size_t acc_bytes) {
  const std::size_t fixed = 16 + acc_bytes;
  if (bytes <= fixed + 2 * (key_bytes + acc_bytes)) return {};
  const auto slots = static_cast<std::uint32_t>((bytes - fixed) / (key_bytes + acc_bytes));
  return {slots, slots / 2};
}

// Partitions so that a partition's cold keys fit its shared table with room to spare (a hash
// spreads keys evenly; 0.6 of the table's key limit leaves ~6 standard deviations at 2,000 keys),
// at least `min_partitions` (enough blocks for every SM), at most `max_partitions` (the main pass
// keeps one counter per partition in shared memory).
inline std::uint32_t partitions_for(double cold_distinct, std::uint32_t keys_per_table, std::uint32_t min_partitions,
                                    std::uint32_t max_partitions) {
  if (keys_per_table == 0) return 0;
  const double per = 0.6 * keys_per_table;
  const double want = std::ceil(std::max(0.0, cold_distinct) / per);
  const double p = std::clamp(want, double(std::max<std::uint32_t>(1, min_partitions)), double(std::max<std::uint32_t>(1, max_partitions)));
  return static_cast<std::uint32_t>(p);
}

// Region of one (partition, producing block): the mean number of cold pairs it receives plus
// slack for the spread (30% and 4 standard deviations of a Poisson count, at least 16), rounded up
// to 8 entries (32-byte sectors for 4-byte keys).
inline std::uint32_t region_for(double cold_records, std::uint32_t partitions, std::uint32_t producers) {
  if (partitions == 0 || producers == 0) return 0;
  const double mean = std::max(0.0, cold_records) / (double(partitions) * double(producers));
  const double r = std::ceil(1.3 * mean + 4.0 * std::sqrt(mean) + 16.0);
  const auto ri = static_cast<std::uint64_t>(std::min(r, double(1u << 30)));
  return static_cast<std::uint32_t>((ri + 7) / 8 * 8);
}

// Entries of the whole buffer (partitions x producers x region).
inline std::uint64_t buffer_entries(std::uint32_t partitions, std::uint32_t producers, std::uint32_t region) {
  return std::uint64_t(partitions) * producers * region;
}

}  // namespace tandem::mr::partition_plan
