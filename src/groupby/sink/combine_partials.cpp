#include "groupby/sink/combine_partials.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "groupby/cpu_engine.hpp"
#include "groupby/cpu_keys.hpp"
#include "groupby/ops/var.hpp"
#include "groupby/sink/partitioned_combine.hpp"
#include "table/made_here.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::sink {
namespace {

using Kind = CombinePlan::Output::Kind;

// As tandem::groupby: below ~16K rows per thread, starting threads costs more than it saves.
int threads_for(std::size_t rows, int threads) {
  return static_cast<int>(std::min<std::size_t>(std::max(1, threads), rows / 16384 + 1));
}

// The group of every partial row, and the number of groups (group ids ascend in key order).
struct PartialGroupIds {
  std::vector<std::uint32_t> gid;
  std::uint64_t groups{0};
};

PartialGroupIds partial_group_ids(const Table& partials, const std::vector<std::string>& by, int threads) {
  std::vector<const Column*> keys;
  for (const auto& k : by) keys.push_back(&partials.column(k));
  Report ignored;
  const cpu_groupby::GroupKeys groups(keys, partials.rows(), threads_for(partials.rows(), threads), ignored);
  PartialGroupIds ids{std::vector<std::uint32_t>(partials.rows()), groups.groups()};
  if (!ids.gid.empty()) groups.fill(0, ids.gid.size(), ids.gid.data());
  return ids;
}

// Each group's moments from its partial rows' count, mean and variance, merged in row (chunk)
// order; out[i] for the i-th occupied group in key order (the final table's rows).
std::vector<agg::Moments> combine_moments(const Table& partials, const PartialGroupIds& ids,
                                          const CombinePlan::Output& o) {
  std::vector<agg::Moments> state(ids.groups, agg::Moments{0, 0.0, 0.0});
  std::vector<std::uint8_t> seen(ids.groups, 0);
  const Column &count = partials.column(o.count), &mean = partials.column(o.source), &var = partials.column(o.var);
  const auto n = count.numbers<std::int64_t>();
  const auto m = mean.numbers<double>(), v = var.numbers<double>();
  for (std::size_t i = 0; i < ids.gid.size(); ++i) {
    const std::uint32_t g = ids.gid[i];
    seen[g] = 1;
    if (n[i] == 0) continue;
    // One value: Welford's first step, m2 = x (x - x), which is NaN for an infinite or NaN x.
    const double m2 = n[i] >= 2 && var.present(i) ? v[i] * static_cast<double>(n[i] - 1) : m[i] * (m[i] - m[i]);
    state[g].merge(agg::Moments{n[i], m[i], m2});
  }
  std::vector<agg::Moments> out;
  for (std::size_t g = 0; g < state.size(); ++g)
    if (seen[g]) out.push_back(state[g]);
  return out;
}

Column moments_column(const std::string& name, const std::vector<agg::Moments>& moments, bool std_dev) {
  std::vector<double> v(moments.size(), 0.0);
  auto valid = make_validity(v.size(), [&](std::size_t i) { return moments[i].variance().has_value(); });
  for (std::size_t i = 0; i < v.size(); ++i)
    if (const auto var = moments[i].variance()) v[i] = std_dev ? std::sqrt(*var) : *var;
  return make_column(name, std::move(v), std::move(valid));
}

// mean = sum / count of the summed partial f64 sums and counts; missing where the count is 0.
Column mean_column(const std::string& name, const Column& sums, const Column& counts) {
  const auto s = sums.numbers<double>();
  const auto c = counts.numbers<std::int64_t>();
  std::vector<double> v(sums.length, 0.0);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (c[i] > 0) v[i] = s[i] / static_cast<double>(c[i]);
  auto valid = make_validity(v.size(), [&](std::size_t i) { return c[i] > 0 && sums.present(i); });
  return make_column(name, std::move(v), std::move(valid));
}

Column renamed(Column c, const std::string& name) {
  c.name = name;
  return c;
}

// The result's columns in the caller's order: keys and final aggregations from the final
// groups, var and std from the partial groups, holistic ones from their own groups.
Table result_columns(const Table& final_groups, const Table& partials, const Table& holistic, const SinkPlan& plan,
                     int threads) {
  std::optional<PartialGroupIds> ids;  // for var and std, made once
  Table out;
  for (const auto& k : plan.spec.by) out.add(final_groups.column(k), detail::kMadeHere);  // a table's, checked
  for (const auto& o : plan.combine.outputs) {
    switch (o.kind) {
      case Kind::column: out.add(renamed(final_groups.column(o.source), o.name), detail::kMadeHere); break;
      case Kind::mean: out.add(mean_column(o.name, final_groups.column(o.source), final_groups.column(o.count))); break;
      case Kind::var:
      case Kind::std:
        if (!ids) ids = partial_group_ids(partials, plan.spec.by, threads);
        out.add(moments_column(o.name, combine_moments(partials, *ids, o), o.kind == Kind::std));
        break;
      case Kind::kept: out.add(renamed(holistic.column(o.source), o.name), detail::kMadeHere); break;
    }
  }
  return out;
}

}  // namespace

Combined combine_partials(const Table& partials, const Table& kept, const SinkPlan& plan, int threads,
                          bool mostly_distinct) {
  Report engine;
  if (plan.kept_only) {
    Table t = cpu_groupby::run(kept, plan.kept, threads_for(kept.rows(), threads), engine);
    return {std::move(t), false, false, std::move(engine.stages)};
  }
  const bool partitioned = !mostly_distinct && combines_by_partition(plan, partials, partials.rows());
  const Table final_groups =
      partitioned ? final_groups_by_partition(partials, plan, threads)
                  : cpu_groupby::run(partials, plan.final, threads_for(partials.rows(), threads), engine);
  Table holistic;
  if (!plan.kept.aggs.empty()) {
    holistic = cpu_groupby::run(kept, plan.kept, threads_for(kept.rows(), threads), engine);
    if (holistic.rows() != final_groups.rows())
      throw Error(fmt::format("group-by sink: {} groups in the kept rows, {} in the partial groups", holistic.rows(),
                              final_groups.rows()));
  }
  return {result_columns(final_groups, partials, holistic, plan, threads), partitioned, false,
          std::move(engine.stages)};
}

bool combine_partials_in_pieces(const Table& partials, const SinkPlan& plan, int threads, bool mostly_distinct,
                                std::size_t piece_groups, const std::function<void(Table)>& emit,
                                std::vector<Stage>& engine) {
  if (plan.kept_only || !plan.kept.aggs.empty()) return false;
  for (const auto& o : plan.combine.outputs)
    if (o.kind == Kind::var || o.kind == Kind::std) return false;
  if (!mostly_distinct && combines_by_partition(plan, partials, partials.rows())) return false;
  Report report;
  cpu_groupby::run_in_pieces(partials, plan.final, threads_for(partials.rows(), threads), report, piece_groups,
                             [&](Table piece) { emit(result_columns(piece, Table{}, Table{}, plan, threads)); });
  engine = std::move(report.stages);
  return true;
}

Combined combine_running(std::vector<std::unique_ptr<RunningGroups>>& tables, const SinkPlan& plan, const Table& input,
                         int threads) {
  if (!plan.kept.aggs.empty()) throw Error("group-by sink: running groups merged with rows kept");
  std::vector<Stage> steps;
  bool into_largest = false;
  const Table final_groups = final_groups_from_running(tables, plan, input, threads, &steps, &into_largest);
  Stopwatch result;
  Table out = result_columns(final_groups, Table{}, Table{}, plan, threads);
  steps.push_back({"result table", "cpu", result.seconds(), {}});
  return {std::move(out), !into_largest, into_largest, std::move(steps)};
}

}  // namespace tandem::sink
