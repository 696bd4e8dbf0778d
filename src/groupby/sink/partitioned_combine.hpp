// The final groups made partition by partition: the partial groups of every chunk and thread are
// split by their keys' hash into partitions of some 2^15 rows, each partition's groups folded by
// running groups (the plan's final aggregations) on a thread of its own, where its hash table,
// keys and states stay in the cache; the groups are then joined and put in key order. As
// DuckDB's radix-partitioned aggregate finalises partition by partition. For 10^6 string keys
// met by every consuming thread this replaces the CPU engine over all 2·10^6 partial groups at
// once, which ranked the strings and grouped them on one table (0.87 s against 0.47 s on two
// cores for db-benchmark q3 at K = 10).
#pragma once
#include <memory>
#include <vector>

#include "groupby/sink/chunk_partials.hpp"
#include "groupby/sink/running_groups.hpp"
#include "tandem/core/report.hpp"

namespace tandem::sink {

// Whether final_groups_by_partition (or final_groups_from_running, where `from_running`) can make
// the plan's final groups of `rows` partial groups with the columns of `partials`, and faster
// than the CPU engine: enough rows to be worth splitting, keys and final aggregations that
// running groups hold, no var or std (whose moments are combined over every partial row in key
// order), and a string key unless the groups come straight from running groups: integer keys
// alone the engine groups faster than split_by_hash and the gathers cost, but not faster than
// folding groups already split by partition (db-benchmark q5 on 2 threads: 0.19–0.21 s against
// the engine's 0.23–0.25 s for 10^6 groups of id6 at K = 10, 30 against 55 ms for 10^5 at K = 100).
bool combines_by_partition(const SinkPlan& plan, const Table& partials, std::size_t rows, bool from_running = false);

// How many top bits of the key hash pick a partition of this many partial groups: partitions of
// some 2^15 rows, at least four a thread, at most 2^12.
int partition_bits(std::size_t rows, int threads);

// The plan's final aggregations over the partial groups, rows in key order: the table
// cpu_groupby::run(partials, plan.final) gives.
Table final_groups_by_partition(const Table& partials, const SinkPlan& plan, int threads);

// final_groups_by_partition straight from every consuming thread's running groups (same plan,
// whose partial aggregations the final ones fold; `input`: the tables' engine_input types):
// partition q merges partition q of every table (partition_bits of all their groups) into a
// table of its own, so that no partial group is ever made, joined, hashed again or gathered. The
// tables are used up. Two tables (consuming threads) whose keys are mostly the same are merged
// into the larger instead (RunningGroups::absorb), and `into_largest` says so. `steps`, where
// given, gets the time of the merge and of the key order.
Table final_groups_from_running(std::vector<std::unique_ptr<RunningGroups>>& tables, const SinkPlan& plan,
                                const Table& input, int threads, std::vector<Stage>* steps = nullptr,
                                bool* into_largest = nullptr);

}  // namespace tandem::sink
