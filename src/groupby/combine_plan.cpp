#include "groupby/combine_plan.hpp"

#include <algorithm>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem {
namespace {

using Kind = CombinePlan::Output::Kind;

// mean = the summed partial sums over the summed counts; missing where the count is 0.
template <class S>
Column mean_column(const std::string& name, const Column& sums, const Column& counts) {
  const auto s = sums.numbers<S>();
  const auto c = counts.numbers<std::int64_t>();
  std::vector<double> v(sums.length);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = c[i] > 0 ? double(s[i]) / double(c[i]) : 0.0;
  auto valid = make_validity(v.size(), [&](std::size_t i) { return c[i] > 0 && sums.present(i); });
  return make_column(name, std::move(v), std::move(valid));
}

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

Table combined_result(const Table& final_groups, const std::vector<std::string>& by, const CombinePlan& plan) {
  std::vector<Column> cols;
  for (const auto& k : by) cols.push_back(final_groups.column(k));
  for (const auto& o : plan.outputs) {
    const Column& source = final_groups.column(o.source);
    if (o.count.empty()) {
      cols.push_back(source);
      continue;
    }
    const Column& counts = final_groups.column(o.count);
    cols.push_back(visit_numeric(source.type, [&](auto zero) {
      using S = decltype(zero);
      if constexpr (std::is_same_v<S, double> || std::is_same_v<S, std::int64_t> || std::is_same_v<S, std::uint64_t>)
        return mean_column<S>(o.name, source, counts);
      else throw Error("group-by: a partial sum of unexpected type " + std::string(to_string(source.type)));
      return Column{};
    }));
  }
  return Table(std::move(cols));
}

}  // namespace tandem
