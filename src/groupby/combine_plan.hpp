// How a group-by splits into partial aggregations over pieces of the rows and a final one over
// the partial groups: what the distributed group-by (pieces: ranks, in any order) and the chunk
// sink (pieces: chunks, combined in input order) share.
//   count, count_rows, sum → partial as asked, final sum;  min, max → partial and final alike;
//   mean → partial sum and count, final sums, then sum / count.
// For chunks only (CombineTarget::chunks), whose partial groups are combined in row order:
//   mean's partial sum reads the column as f64 (as mean itself adds in double, so a partial sum
//   of integers cannot overflow where mean would not); first, last → partial and final alike;
//   var, std → partial count, mean and var, combined by Chan's formula (CombinePlan::Output::
//   Kind::moments); median, quantile, nunique, top (holistic) → `kept`: run once over the kept
//   rows of their columns.
// For ranks, any other aggregation makes the plan not combinable (the rows are shuffled).
#pragma once
#include <string>
#include <vector>

#include "tandem/groupby.hpp"

namespace tandem {

enum class CombineTarget { ranks, chunks };

struct CombinePlan {
  bool combinable{false};
  std::vector<Aggregation> partial;  // on each piece's rows
  std::vector<Aggregation> final;    // on the partial groups of every piece
  std::vector<Aggregation> kept;     // chunks: holistic aggregations over the kept rows
  // The result's columns after the keys, in the caller's order.
  struct Output {
    enum class Kind { column, mean, var, std, kept };
    std::string name;
    std::string source;  // column, kept: that column of the final / kept table; var, std: the partial mean
    std::string count;   // mean: source / count; var, std: the partial count
    Kind kind{Kind::column};
    std::string var;  // var, std: the partial sample variance
  };
  std::vector<Output> outputs;
  // Columns whose f64 copy (named as_f64_name(column)) the partial aggregations read.
  std::vector<std::string> as_f64;
};

// The name of a column's f64 copy in a chunk (CombineTarget::chunks).
std::string as_f64_name(const std::string& column);

CombinePlan plan_combine(const std::vector<Aggregation>& aggs, CombineTarget target = CombineTarget::ranks);

// The final groups' keys, then the caller's outputs in order, a mean as its summed partial sum
// over its summed count: the answer of a CombineTarget::ranks plan whose partial groups were
// grouped by plan.final.
Table combined_result(const Table& final_groups, const std::vector<std::string>& by, const CombinePlan& plan);

}  // namespace tandem
