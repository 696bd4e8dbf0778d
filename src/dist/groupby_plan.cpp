#include "dist/groupby_plan.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "tandem/mapreduce/distinct_estimate.hpp"

namespace tandem::dist {

CombinePlan plan_combine(const std::vector<Aggregation>& aggs) {
  CombinePlan plan;
  plan.combinable = true;
  for (std::size_t i = 0; i < aggs.size(); ++i) {
    const Aggregation& a = aggs[i];
    const std::string out = output_names(a).front();
    const std::string part = fmt::format("__part{}", i);
    switch (a.op) {
      case AggOp::count_rows:
      case AggOp::count:
      case AggOp::sum:
        plan.partial.push_back({a.op, a.column, a.q, a.n, part});
        plan.final.push_back({AggOp::sum, part, 0.5, 1, out});
        plan.outputs.push_back({out, out, {}});
        break;
      case AggOp::min:
      case AggOp::max:
        plan.partial.push_back({a.op, a.column, a.q, a.n, part});
        plan.final.push_back({a.op, part, 0.5, 1, out});
        plan.outputs.push_back({out, out, {}});
        break;
      case AggOp::mean: {
        const std::string count = fmt::format("__count{}", i);
        plan.partial.push_back({AggOp::sum, a.column, 0.5, 1, part});
        plan.partial.push_back({AggOp::count, a.column, 0.5, 1, count});
        plan.final.push_back({AggOp::sum, part, 0.5, 1, part});
        plan.final.push_back({AggOp::sum, count, 0.5, 1, count});
        plan.outputs.push_back({out, part, count});
        break;
      }
      default: return CombinePlan{};
    }
  }
  return plan;
}

std::vector<std::size_t> sample_rows(std::uint64_t rows) {
  std::vector<std::size_t> out;
  if (rows <= kGroupSample) {
    for (std::size_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  std::mt19937_64 rng(0x5eed);
  std::uniform_int_distribution<std::uint64_t> pick(0, rows - 1);
  for (std::uint64_t j = 0; j < kGroupSample; ++j) out.push_back(static_cast<std::size_t>(pick(rng)));
  return out;
}

std::uint64_t estimate_groups(std::vector<std::uint64_t> sample_hashes, std::uint64_t rows) {
  std::sort(sample_hashes.begin(), sample_hashes.end());
  mapreduce::distinct_estimate::Sample s;
  s.records = sample_hashes.size();
  s.total = std::max<std::uint64_t>(rows, s.records);
  for (std::size_t i = 0; i < sample_hashes.size();) {
    std::size_t j = i;
    while (j < sample_hashes.size() && sample_hashes[j] == sample_hashes[i]) ++j;
    s.distinct += 1;
    s.once += j - i == 1;
    s.twice += j - i == 2;
    i = j;
  }
  const double groups = mapreduce::distinct_estimate::estimate(s, 0).chao1;
  return std::min<std::uint64_t>(rows, static_cast<std::uint64_t>(groups));
}

bool shuffle_rows_instead(std::uint64_t groups, std::uint64_t rows) { return rows > 0 && 3 * groups >= 2 * rows; }

}  // namespace tandem::dist
