// The pure part of how dist::groupby chooses to shuffle: the sample of a rank's rows, the estimate
// of its groups, and the threshold. How aggregations split into partial and final ones is
// groupby/combine_plan.hpp, shared with the chunk sink.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "groupby/combine_plan.hpp"
#include "tandem/groupby.hpp"

namespace tandem::dist {

// Rows whose keys stand for a rank's `rows`: all of them up to kGroupSample, else kGroupSample
// drawn at random (with a fixed seed; random, so that rows sorted by their keys do not make every
// sampled key look new).
inline constexpr std::uint64_t kGroupSample = 16384;
std::vector<std::size_t> sample_rows(std::uint64_t rows);

// The groups `rows` rows form, estimated from the key hashes of a sample of them (Chao1: a lower
// bound), at most `rows`.
std::uint64_t estimate_groups(std::vector<std::uint64_t> sample_hashes, std::uint64_t rows);

// Whether aggregations that combine should still shuffle the rows themselves: when all ranks'
// groups are estimated at 2/3 of their rows or more, partial groups would shrink the shuffle by
// less than 1.5x, and the owners would group nearly as many again (a whole group-by pass more).
bool shuffle_rows_instead(std::uint64_t groups, std::uint64_t rows);

}  // namespace tandem::dist
