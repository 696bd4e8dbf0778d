// The group-by sink's finish over partial groups: the final aggregations over the partial groups
// of every chunk (joined in chunk order, so first and last keep row order), var and std by Chan's
// combination of each chunk's count, mean and variance, holistic aggregations over the kept
// rows, and the result's columns in the caller's order.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "groupby/sink/chunk_partials.hpp"
#include "groupby/sink/running_groups.hpp"
#include "tandem/groupby.hpp"

namespace tandem::sink {

// The final groups, and how they were combined (for the report).
struct Combined {
  Table table;
  bool by_partition{false};   // folded partition by partition (partitioned_combine.hpp)
  bool into_largest{false};   // running groups merged into the largest table instead
  std::vector<Stage> engine;  // the CPU engine's stages, where it combined them
};

// partials: every chunk's partial groups, in chunk order; kept: every chunk's kept rows, in
// chunk order (no columns when the plan keeps none). The result in key order. mostly_distinct:
// the keys proved mostly distinct (each row its own partial group), so that folding them
// partition by partition would only add work to the CPU engine's.
Combined combine_partials(const Table& partials, const Table& kept, const SinkPlan& plan, int threads,
                          bool mostly_distinct = false);

// combine_partials's table handed to `emit` at most `piece_groups` groups at a time, in key
// order, where the CPU engine combines the partial groups and the result needs nothing but the
// final groups (no rows kept, no var or std): the whole result is never built at once (10^7
// mostly distinct groups: a result table of some 900 MB). False, and nothing handed on, for
// other plans.
bool combine_partials_in_pieces(const Table& partials, const SinkPlan& plan, int threads, bool mostly_distinct,
                                std::size_t piece_groups, const std::function<void(Table)>& emit,
                                std::vector<Stage>& engine);

// The same straight from every consuming thread's running groups (final_groups_from_running): for
// plans that combines_by_partition allows and that keep no rows. The tables are used up.
Combined combine_running(std::vector<std::unique_ptr<RunningGroups>>& tables, const SinkPlan& plan, const Table& input,
                         int threads);

}  // namespace tandem::sink
