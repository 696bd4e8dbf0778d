// How a group-by splits into a partial aggregation on every rank (the combiner) and a final one
// on the rank owning each group. count, sum, min and max combine by sum, sum, min and max; mean
// by the sum of sums over the sum of counts. The rest (first, last, var, std, median, quantile,
// nunique, top) do not combine from partial groups: their rows themselves are shuffled.
#pragma once
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

}  // namespace tandem::dist
