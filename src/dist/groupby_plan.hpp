// How a group-by splits into a partial aggregation on every rank (the combiner) and a final one
// on the rank owning each group. count, sum, min and max combine by sum, sum, min and max; mean
// by the sum of sums over the sum of counts. The rest (first, last, var, std, median, quantile,
// nunique, top) do not combine from partial groups: their rows themselves are shuffled.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/groupby.hpp"

namespace tandem::dist {

struct CombinePlan {
  bool combinable{false};
  std::vector<Aggregation> partial;  // on each rank's rows
  std::vector<Aggregation> final;    // on the partial groups every rank sent to the owner
  // The result's columns after the keys, in the caller's order: a column of the final table
  // (name == source) or a mean, sum / count of two final columns.
  struct Output {
    std::string name;
    std::string source;
    std::string count;  // non-empty: a mean, source / count
  };
  std::vector<Output> outputs;
};

CombinePlan plan_combine(const std::vector<Aggregation>& aggs);

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
