// Every constant of the group-by sink in one place (as DuckDB's RadixHTConfig): how many
// partitions a spill splits the partial groups into, what the memory limit is by default, and
// how many threads a consume() call takes.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tandem::sink {

struct SinkConfig {
  // Partitions by the top bits of the keys' hash: 32 keeps each partition's share of the groups
  // (and so finish()'s memory per partition) at ~3 % of all of them, with 64 files open at most.
  static constexpr unsigned kPartitionBits = 5;
  static constexpr std::size_t kPartitions = std::size_t{1} << kPartitionBits;
  // Files per partition: its partial groups and its kept rows (for holistic aggregations).
  static constexpr std::size_t kFilesPerPartition = 2;
  // The default memory limit: this share of the memory available when the sink is made
  // (MemAvailable, under a cgroup's limit), leaving the rest to the scan, the chunks in flight
  // and finish(); kMemoryWhenUnknown when it cannot be read.
  static constexpr std::size_t kMemoryShareDivisor = 4;
  static constexpr std::size_t kMemoryWhenUnknown = std::size_t{1} << 30;
  // consume() runs the CPU engine on the calling thread: its callers are the parallel part.
  static constexpr int kConsumeThreads = 1;
  // Running groups are given up (later chunks reduced on their own) when, after this many rows,
  // they hold more than kRunningGroupsShare of them as groups: mostly distinct keys, where a hash
  // table per thread only adds a step (as DuckDB abandons its thread-local tables). 2^17 rows
  // drawn from D keys make D·(1 - e^(-2^17/D)) groups: 94 % of the rows for D = 10^6 (db-benchmark
  // K = 10's id3 and id6, whose tables then fold 10 rows a group, halving the combine's input and
  // the peak memory), 99.3 % for D = 10^7 (q10's key tuples, which stay distinct).
  static constexpr std::size_t kRunningProbeRows = std::size_t{1} << 17;
  static constexpr double kRunningGroupsShare = 0.95;

  static unsigned partition_of(std::uint64_t key_hash) {
    return static_cast<unsigned>(key_hash >> (64 - kPartitionBits));
  }
  // memory_limit as given, or the default above.
  static std::size_t memory_limit(std::size_t given);
};

}  // namespace tandem::sink
