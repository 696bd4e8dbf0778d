// Internal: edits of a plan that the planners and the hybrid driver share (tested on the CPU).
#pragma once
#include "tandem/sort/bitonic_plan.hpp"

namespace tandem::bitonic {

// Applies the short-run rule in place.
void apply_min_interior_run(Plan& p, int min_interior_run);
// Chooses per independent run between concurrent and gathered by predicted time, then compares
// with every single-device plan and keeps the cheapest (unless allow_single_device is false).
// Adds notes saying why.
void optimise(Plan& p, const CostModel& cost, bool allow_single_device = true);

}  // namespace tandem::bitonic
