// The distinct-key estimate under its former name in the mapreduce namespace (the distributed
// group-by plan reaches it here): tandem/core/distinct_estimate.hpp.
#pragma once
#include "tandem/core/distinct_estimate.hpp"

namespace tandem::mapreduce {
namespace distinct_estimate = tandem::distinct_estimate;
}  // namespace tandem::mapreduce
