#include "groupby/combine_plan.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tandem {
namespace {

using Kind = CombinePlan::Output::Kind;

void plan_mean(CombinePlan& plan, const Aggregation& a, std::size_t i, CombineTarget target) {
  const std::string out = output_names(a).front(), part = fmt::format("__part{}", i),
                    count = fmt::format("__count{}", i);
  std::string column = a.column;
  if (target == CombineTarget::chunks) {
    if (std::find(plan.as_f64.begin(), plan.as_f64.end(), a.column) == plan.as_f64.end())
      plan.as_f64.push_back(a.column);
    column = as_f64_name(a.column);
  }
  plan.partial.push_back({.op = AggOp::sum, .column = column, .name = part});
  plan.partial.push_back({.op = AggOp::count, .column = a.column, .name = count});
  plan.final.push_back({.op = AggOp::sum, .column = part, .name = part});
  plan.final.push_back({.op = AggOp::sum, .column = count, .name = count});
  plan.outputs.push_back({out, part, count, Kind::mean, {}});
}

// var and std from each chunk's count, mean and variance, combined in order (Chan et al.).
void plan_moments(CombinePlan& plan, const Aggregation& a, std::size_t i) {
  const std::string out = output_names(a).front(), count = fmt::format("__count{}", i),
                    mean = fmt::format("__mean{}", i), var = fmt::format("__var{}", i);
  plan.partial.push_back({.op = AggOp::count, .column = a.column, .name = count});
  plan.partial.push_back({.op = AggOp::mean, .column = a.column, .name = mean});
  plan.partial.push_back({.op = AggOp::var, .column = a.column, .name = var});
  plan.outputs.push_back({out, mean, count, a.op == AggOp::var ? Kind::var : Kind::std, var});
}

}  // namespace

std::string as_f64_name(const std::string& column) { return "__f64 " + column; }

CombinePlan plan_combine(const std::vector<Aggregation>& aggs, CombineTarget target) {
  CombinePlan plan;
  plan.combinable = true;
  const bool chunks = target == CombineTarget::chunks;
  for (std::size_t i = 0; i < aggs.size(); ++i) {
    const Aggregation& a = aggs[i];
    const std::string out = output_names(a).front();
    const std::string part = fmt::format("__part{}", i);
    switch (a.op) {
      case AggOp::count_rows:
      case AggOp::count:
      case AggOp::sum:
        plan.partial.push_back({a.op, a.column, a.q, a.n, part});
        plan.final.push_back({.op = AggOp::sum, .column = part, .name = out});
        plan.outputs.push_back({out, out, {}, Kind::column, {}});
        break;
      case AggOp::first:
      case AggOp::last:
        if (!chunks) return CombinePlan{};
        [[fallthrough]];
      case AggOp::min:
      case AggOp::max:
        plan.partial.push_back({a.op, a.column, a.q, a.n, part});
        plan.final.push_back({.op = a.op, .column = part, .name = out});
        plan.outputs.push_back({out, out, {}, Kind::column, {}});
        break;
      case AggOp::mean: plan_mean(plan, a, i, target); break;
      case AggOp::var:
      case AggOp::std:
        if (!chunks) return CombinePlan{};
        plan_moments(plan, a, i);
        break;
      default:
        if (!chunks) return CombinePlan{};
        plan.kept.push_back(a);
        for (const auto& name : output_names(a)) plan.outputs.push_back({name, name, {}, Kind::kept, {}});
    }
  }
  return plan;
}

}  // namespace tandem
