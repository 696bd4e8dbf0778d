#include "dist/groupby_plan.hpp"

#include <fmt/format.h>

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

}  // namespace tandem::dist
