// The CPU group-by engine: group ids from the keys (cpu_keys.hpp), then the aggregations over
// threads as cpu_plan.hpp lays out, then the result table in key order.
#pragma once
#include "tandem/groupby.hpp"

namespace tandem::cpu_groupby {

// threads: OpenMP threads (>= 1). Notes what ran into the report.
Table run(const Table& input, const GroupBySpec& spec, int threads, Report& report);

}  // namespace tandem::cpu_groupby
