// One consuming thread's groups across every chunk it consumes, as DuckDB's thread-local
// aggregate hash tables: a hash table from the keys to dense group ids, each group's keys, and
// each group's partial aggregation states side by side in one record. A key met in every chunk
// costs one group per thread instead of one partial group per chunk (10^5 keys in 60 chunks of
// 8 MiB: 2·10^5 partial groups to combine instead of 5·10^6). take() hands the groups over as
// the partial groups chunk_partials.hpp makes of one chunk (same columns, rows in no particular
// order) and starts again empty.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "core/scratch.hpp"
#include "groupby/sink/chunk_partials.hpp"

namespace tandem::sink {

// Whether running groups can hold the plan's partial aggregations over these columns (a chunk's
// engine_input): integer or string keys (float keys are grouped by the engine's ranks, -0.0
// with +0.0 and every NaN together, and it alone decides which key shows), and no partial state
// that needs row order (first, last) or points into a chunk's buffers (min, max of strings).
bool keeps_running_groups(const SinkPlan& plan, const Table& input);

// A table's group ids by partition (the top `bits` bits of each group's key hash, the hash_rows
// of its keys): partition p is ids[starts[p] .. starts[p + 1]), ascending.
struct GroupPartitions {
  std::vector<std::size_t> starts;
  Scratch<std::uint32_t> ids;
};

class RunningGroups {
 public:
  // `input`: any chunk's engine_input, for the columns' types; the plan must outlive this.
  RunningGroups(const SinkPlan& plan, const Table& input);
  ~RunningGroups();
  RunningGroups(const RunningGroups&) = delete;
  RunningGroups& operator=(const RunningGroups&) = delete;

  // Folds a chunk's engine_input (same column types as the constructor's) into the groups:
  // all its rows, or rows [begin, end).
  void add(const Table& input);
  void add(const Table& input, std::size_t begin, std::size_t end);
  // Folds the given groups of another table (same plan and column types) into these: each key
  // found or added, its states merged, its missing values counted. The other table is unchanged.
  void merge(const RunningGroups& other, std::span<const std::uint32_t> groups);
  // merge() of all the other table's groups, the lookups and the folds of groups found here on
  // `threads` threads, the groups new here added one at a time; false (nothing changed) when more
  // than `most_missing` of them are new here.
  bool absorb(const RunningGroups& other, int threads, double most_missing);
  // Room for this many groups in all, taken at once instead of doubling (a hint: more may come).
  void reserve(std::size_t groups);
  std::size_t groups() const;
  std::size_t rows() const;  // rows added since the start or the last take()
  // Bytes held: the hash table, the keys and the states.
  std::size_t bytes() const;
  // The partial groups so far (keys, the plan's partial aggregations); then empty. InputError
  // where a group's 64-bit integer sum does not fit its type.
  Table take();
  // The groups dropped (as after take(), with no table made and no sum checked).
  void clear();
  // The groups by partition, `bits` (1–24) of the key hash.
  GroupPartitions partitions(int bits) const;
  struct Impl;  // defined in running_groups.cpp only

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::sink
