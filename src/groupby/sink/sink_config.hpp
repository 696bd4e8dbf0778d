// Every constant of the group-by sink in one place (as DuckDB's RadixHTConfig): how many
// partitions a spill splits the partial groups into, what the memory limit is by default, and
// how many threads a consume() call takes.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tandem::sink {

struct SinkConfig {
  // Key ranges made at the first spill (splitters sampled from the partial groups at hand): 64
  // keeps each range's share of the groups near 1.6 %, 128 files open at most.
  static constexpr std::size_t kPartitions = 64;
  // Files per partition: its partial groups and its kept rows (for holistic aggregations).
  static constexpr std::size_t kFilesPerPartition = 2;
  // Rows sampled for splitters: 256 a range, so that ranges come within ~10 % of their share.
  static constexpr std::size_t kSampleRows = 256 * kPartitions;
  // finish() combines a range whose spill files hold at most memory_limit / kFinishShare bytes
  // (reading it back, joining its blocks and the engine's group ids and result take about three
  // times its bytes more); a larger one is split again by its own sampled splitters, at most
  // kMaxSplitDepth times over.
  // Ranges below kMinRangeBytes are never split: a tiny limit would otherwise split every range
  // into thousands of files.
  static constexpr std::size_t kFinishShare = 5;
  // A result the CPU engine combines in memory goes to finish(pieces) this many groups at a time
  // (2^20: some 90 MB of db-benchmark q10's result a piece instead of 900 MB at once).
  static constexpr std::size_t kResultPieceGroups = std::size_t{1} << 20;
  static constexpr std::size_t kMinRangeBytes = std::size_t{1} << 16;
  static constexpr int kMaxSplitDepth = 3;
  // The default memory limit: this share of the memory available when the sink is made
  // (MemAvailable, under a cgroup's limit), leaving the rest to the scan, the chunks in flight
  // and finish(); 1 GiB when it cannot be read (memory_limit_or_share).
  static constexpr std::size_t kMemoryShareDivisor = 4;
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
  // Above that share they are still kept where the chunks' rows in all (expected_rows, when the
  // caller can tell) are at least kRunningRowsPerKey times the keys the share implies: the D of
  // groups = D·(1 - e^(-rows/D)). db-benchmark q3 at 10^9 rows has 10^7 keys, 99.3 % distinct
  // after 2^17 rows but 100 rows a key in all (6 in each of 16 threads' tables): given up, every
  // row became a partial group of its own and 10^9 of them spilled; kept, each thread's table
  // folds its rows into at most 10^7.
  static constexpr double kRunningRowsPerKey = 4;
  // Whether running groups holding `groups` groups of `rows` rows are kept (expected_rows: the
  // rows this table will see in all, 0 when unknown).
  static bool running_groups_pay(std::size_t rows, std::size_t groups, std::size_t expected_rows);
  // Until some table has shown repeating keys, a fresh table folds a chunk's first
  // kEarlyProbeRows rows alone and gives the keys up at once where even a low estimate of their
  // number is past kEarlyDistinctKeys and past kRunningRowsPerKey times the rows the table will
  // see: every consuming thread's first chunk went whole into a hash table before the probe above
  // could decide (16 of q10's 61 chunks on 16 threads). n = 2^14 rows from D keys repeat about
  // n²/2D of them: 134 for D = 10^6 (left to the probe above, which keeps them), none for q10's
  // key tuples. The low estimate n²/2(repeats + 3) counts 3 more repeats than seen (a Poisson
  // count of none has a mean below 3 at 95 %): q3 at 10^9 rows (10^7 keys, 6·10^7 rows a table
  // on 16 threads) stays below 2.5·10^8 even with none seen.
  static constexpr std::size_t kEarlyProbeRows = std::size_t{1} << 14;
  static constexpr double kEarlyDistinctKeys = 8e6;
  static bool surely_distinct(std::size_t rows, std::size_t groups, std::size_t expected_rows);
  // The D above (rows drawn uniformly from D keys make `groups` groups); infinite when every row
  // made a group.
  static double estimated_keys(std::size_t rows, std::size_t groups);

  // memory_limit as given, or the default above.
  static std::size_t memory_limit(std::size_t given);
};

}  // namespace tandem::sink
