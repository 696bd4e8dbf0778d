// The group-bys the GPU hash group-by (tandem::mapreduce::groupby) runs today: one integer key column
// without missing keys, and count(), count/sum/min/max/mean of one f32/f64/i32/i64 column
// without missing values. Its result is converted into the table the CPU engine would give.
#pragma once
#include <optional>
#include <string>

#include "tandem/groupby.hpp"

namespace tandem::gpu_route {

// What part of this group-by the GPU engine does not cover (nothing when it covers all).
std::optional<std::string> gap(const Table& input, const GroupBySpec& spec);

// The rows and bytes the GPU would read (keys and the one value column).
std::size_t input_bytes(const Table& input, const GroupBySpec& spec);

// Runs a covered group-by with mapreduce::groupby on the GPU. Nothing when an integer sum may have
// wrapped in the GPU's 64-bit accumulators (the caller reruns it on the CPU, which checks).
std::optional<Table> run(const Table& input, const GroupBySpec& spec, Report& report);

}  // namespace tandem::gpu_route
