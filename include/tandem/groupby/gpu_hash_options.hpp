// The GPU hash group-by engine's settings (zero / negative: tuned or default) and what a GPU
// group-by engine did. The table group-by runs the hash engine with the defaults; the MapReduce
// engines' options (tandem/mapreduce/engine_options.hpp) extend these settings.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "tandem/core/report.hpp"

namespace tandem {

// Settings of the GPU hash group-by (src/groupby/hash/). All 0/-1: chosen by the tuner and cached.
struct GpuHashOptions {
  int blocks{0};                  // Bs
  int block_threads{0};           // N (multiple of 32)
  double sample_fraction{-1};     // p, in [0, 1)
  double hot_fraction{-1};        // share of the sampled distinct keys preloaded as hot (0.05..0.10)
  bool hot_keys{true};            // false: no shared-memory pool at all (the "off" case)
  std::size_t shared_entries{0};  // most hot keys in shared memory a block (0: what fits)
  std::size_t spill_entries{0};   // overflow list (0: sized from the input)
  std::size_t result_entries{0};  // global table slots (0: from the sample)
  // When every sampled key is hot and there are at most 1,024 of them, place them in the shared
  // table by two-choice (cuckoo) hashing: two fixed slots per key, no probe loop.
  bool two_choice{true};
  // Hot keys that are the top of a larger key set (or too many for the above): a bucketed
  // two-choice table (two buckets of 4 slots per key, 4/5 full) that each block builds from the
  // hot list, instead of linear probing at half load.
  bool hot_buckets{true};
  // Counts with a probed hot table: group each warp's lanes by key (__match_any_sync) so one lane
  // per distinct key updates its counter.
  bool warp_match{true};
  // Counts: cold keys (not hot) of a large job are sorted by hash partition per tile in shared
  // memory, appended to per-partition regions and reduced partition by partition in shared
  // memory, instead of going one by one to the global table (the tuner measures both).
  bool partition_cold{true};
  // Integer keys whose range (max - min + 1) is small are reduced into direct-indexed
  // accumulators (slot = key - min), partitioned by the slot's high bits, and come out in key
  // order; a wide range takes the hash table (groupby/hash/dense_plan.hpp says when).
  bool dense_range{true};
  bool tune{true};                                         // measure candidates on first use of a problem class
  std::uint64_t tune_min_records{std::uint64_t{1} << 22};  // smaller jobs are not worth tuning
};

// What a GPU group-by engine did (the hash engine, or the chained MapReduce engine running a
// group-by job), for --explain and the tests.
struct GpuEngineStats {
  std::uint64_t records{0};
  std::uint64_t sampled_records{0};
  std::uint64_t hot_keys{0};      // H
  double hot_share{0};            // share of the sampled pairs whose key is hot
  std::uint64_t shared_hits{0};   // pairs reduced into the shared-memory pool
  std::uint64_t global_hits{0};   // pairs reduced into global memory (block tables / result)
  std::uint64_t spilled{0};       // pairs that went to the spill list
  std::uint64_t result_grows{0};  // times the global result table was grown
  std::uint64_t retries{0};       // whole-job retries with larger buffers
  std::uint64_t distinct{0};
  int blocks{0}, block_threads{0};
  double sample_fraction{0}, hot_fraction{0};
  std::size_t shared_entries{0}, block_pool_entries{0}, spill_entries{0};
  bool block_tables{true}, hot_path{true};
  // hash path
  std::string engine{"chained"};       // "chained" or "hash"
  std::uint64_t sampled_distinct{0};   // distinct keys in the sample
  std::uint64_t distinct_estimate{0};  // Chao1 estimate from the sample (a lower bound)
  std::uint64_t distinct_upper{0};     // Good-Turing upper bound (the table is sized between the two)
  std::uint64_t table_slots{0};        // global table slots (after any grow)
  std::uint32_t sub_tables{1};         // accumulator copies per block in shared memory
  bool two_choice{false};              // hot keys placed by two-choice hashing (no probe loop)
  bool hot_buckets{false};             // hot keys in a bucketed two-choice table
  bool warp_match{false};              // lanes grouped by key before the hot table (counts)
  std::uint32_t partitions{0};         // partitioned cold tier: partitions (0: not used)
  std::string partition_note;          // its sizes, or why it was not used
  std::uint64_t partitioned{0};        // pairs that went through the partitions
  std::uint64_t partition_direct{0};   // of those, pairs sent to the global table (full region or reduce table)
  bool dense{false};                   // the dense-range path (direct-indexed accumulators) ran
  std::uint64_t key_range{0};          // its key range R (max - min + 1)
  std::string dense_note;              // why the dense-range path was not taken
};

// Engine stats as readable lines (for Report notes / --explain).
void explain_stats(Report& r, const GpuEngineStats& s);

}  // namespace tandem
