// The CPU group-by engine: group ids from the keys (cpu_keys.hpp), then the aggregations over
// threads as cpu_plan.hpp lays out, then the result table in key order.
#pragma once
#include <cstddef>
#include <functional>

#include "tandem/groupby.hpp"

namespace tandem::cpu_groupby {

// threads: OpenMP threads (>= 1). Notes what ran into the report.
Table run(const Table& input, const GroupBySpec& spec, int threads, Report& report);

// run()'s table handed to `emit` at most `piece_groups` groups at a time, in key order (one call
// at least: an empty result is one empty piece), so that only a piece of a large result is ever
// built at once: pieces of the same size reuse the scratch pool's pages.
void run_in_pieces(const Table& input, const GroupBySpec& spec, int threads, Report& report, std::size_t piece_groups,
                   const std::function<void(Table)>& emit);

}  // namespace tandem::cpu_groupby
