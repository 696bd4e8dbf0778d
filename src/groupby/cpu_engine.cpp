#include "groupby/cpu_engine.hpp"

#include <omp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "groupby/cpu_aggregator.hpp"
#include "groupby/cpu_keys.hpp"
#include "groupby/cpu_plan.hpp"
#include "groupby/ops/count_rows.hpp"
#include "groupby/ops/registry.hpp"
#include "table/made_here.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::cpu_groupby {
namespace {

using RowCounter = Decomposable<agg::CountRowsOp<NoInput>, NoInput>;
constexpr std::size_t kBlockRows = std::size_t{1} << 14;  // rows every aggregation folds in turn

struct Aggregators {
  RowCounter* rows{nullptr};                         // the engine's own count of rows per group
  std::vector<std::unique_ptr<Aggregator>> by_spec;  // null where the spec asks for count()
  std::unique_ptr<RowCounter> row_counter;
  // Present values per group of each input column with missing values (what decomposable
  // operators finalise with; for the other columns it is the row count).
  std::map<const Column*, std::unique_ptr<Aggregator>> present_counters;
  std::vector<DecomposableAggregator*> decomposable;  // the counters first
  std::vector<HolisticAggregator*> holistic;
  const std::int64_t* present(const Aggregator& a) const {
    const auto it = present_counters.find(a.input());
    if (it == present_counters.end()) return rows->counts();
    return static_cast<const DecomposableAggregator&>(*it->second).counts();
  }
  std::size_t state_bytes() const {
    std::size_t b = 0;
    for (const auto* d : decomposable) b += d->state_bytes();
    return b;
  }
};

Aggregators make_aggregators(const Table& in, const GroupBySpec& spec, Report& report) {
  Aggregators a;
  a.row_counter = std::make_unique<RowCounter>(Aggregation{}, nullptr);
  a.rows = a.row_counter.get();
  a.decomposable.push_back(a.rows);
  for (const auto& s : spec.aggs) {
    const auto& info = agg::operator_info(s.op);
    if (!info.reads_column) {
      a.by_spec.push_back(nullptr);
      report.note(fmt::format("{}: CPU engine, the engine's own row count", agg::describe(s)));
      continue;
    }
    const Column* c = &in.column(s.column);
    a.by_spec.push_back(info.make_cpu(s, c));
    if (auto* h = dynamic_cast<HolisticAggregator*>(a.by_spec.back().get())) {
      a.holistic.push_back(h);
    } else {
      a.decomposable.push_back(static_cast<DecomposableAggregator*>(a.by_spec.back().get()));
      if (!c->validity.empty() && !a.present_counters.count(c)) {
        Aggregation count;
        count.op = AggOp::count;
        count.column = c->name;
        auto& counter = a.present_counters[c] = agg::operator_info(AggOp::count).make_cpu(count, c);
        a.decomposable.insert(a.decomposable.begin() + 1, static_cast<DecomposableAggregator*>(counter.get()));
      }
    }
    report.note(fmt::format("{}: CPU engine, {}", agg::describe(s),
                            info.holistic ? "holistic: each group's values gathered, then selected or sorted"
                                          : "decomposable: per-group states updated and merged"));
  }
  return a;
}

void fold_in_slots(Aggregators& a, const GroupKeys& keys, std::size_t n, const AggregationPlan& plan, int threads) {
  const auto& ds = a.decomposable;
  for (auto* d : ds) d->allocate(plan.slots, keys.groups());
  parallel_for_with(
      plan.slots, threads, [] { return std::vector<std::uint32_t>(kBlockRows); },
      [&](std::vector<std::uint32_t>& gid, std::size_t s) {
        const std::size_t end = std::min(n, (s + 1) * plan.slot_rows);
        for (std::size_t b = s * plan.slot_rows; b < end; b += kBlockRows) {
          if (keys.missed()) return;  // folded again once the keys are exact
          const std::size_t e = std::min(end, b + kBlockRows);
          keys.fill(b, e, gid.data());
          for (auto* d : ds) d->update(s, gid.data(), b, e);
        }
      });
  if (plan.slots == 1 || keys.missed()) return;
  const std::uint64_t groups = keys.groups();
  const std::size_t pieces = std::min<std::uint64_t>(groups, groups * plan.slots < (1u << 16) ? 1 : 16 * threads);
  parallel_for(pieces, pieces > 1 ? threads : 1, [&](std::size_t c) {
    for (auto* d : ds) d->merge_slots(groups * c / pieces, groups * (c + 1) / pieces);
  });
}

// The rows in partition order (stable): their group ids, each needed input column's values, and
// where each partition starts. Chunks of rows count their partitions, then place their rows.
struct Partitions {
  Scratch<std::uint32_t> gid;
  std::map<const Column*, ScatteredColumn> columns;
  std::vector<std::size_t> start;
};

Partitions partition_rows(const GroupKeys& keys, std::size_t n, const std::vector<const Column*>& inputs,
                          const AggregationPlan& plan, int threads) {
  const std::size_t P = plan.partitions, C = std::max<std::size_t>(1, (n + kBlockRows - 1) / kBlockRows);
  const unsigned shift = plan.partition_shift;
  std::vector<std::uint32_t> offset(C * P, 0);
  parallel_for_with(
      C, threads, [] { return std::vector<std::uint32_t>(kBlockRows); },
      [&](std::vector<std::uint32_t>& gid, std::size_t c) {
        const std::size_t b = c * kBlockRows, e = std::min(n, b + kBlockRows);
        keys.fill(b, e, gid.data());
        for (std::size_t i = 0; i < e - b; ++i) ++offset[c * P + (gid[i] >> shift)];
      });
  Partitions parts;
  if (keys.missed()) return parts;  // partitioned again once the keys are exact
  parts.start.resize(P + 1);
  std::size_t run = 0;
  for (std::size_t p = 0; p < P; ++p) {
    parts.start[p] = run;
    for (std::size_t c = 0; c < C; ++c) run += std::exchange(offset[c * P + p], static_cast<std::uint32_t>(run));
  }
  parts.start[P] = n;
  parts.gid.resize(n);
  for (const Column* c : inputs) parts.columns.emplace(c, ScatteredColumn(*c));
  struct Block {
    std::vector<std::uint32_t> gid = std::vector<std::uint32_t>(kBlockRows), pos = gid;
  };
  parallel_for_with(
      C, threads, [] { return Block{}; },
      [&](Block& s, std::size_t c) {
        const std::size_t b = c * kBlockRows, e = std::min(n, b + kBlockRows);
        keys.fill(b, e, s.gid.data());
        std::uint32_t* next = &offset[c * P];
        for (std::size_t i = 0; i < e - b; ++i) {
          s.pos[i] = next[s.gid[i] >> shift]++;
          parts.gid[s.pos[i]] = s.gid[i];
        }
        for (auto& [column, scattered] : parts.columns) scattered.scatter(*column, s.pos.data(), b, e);
      });
  return parts;
}

void fold_in_partitions(Aggregators& a, const GroupKeys& keys, std::size_t n, const AggregationPlan& plan,
                        int threads) {
  std::vector<const Column*> inputs;
  for (const auto& s : a.by_spec)
    if (s && std::find(inputs.begin(), inputs.end(), s->input()) == inputs.end()) inputs.push_back(s->input());
  const Partitions parts = partition_rows(keys, n, inputs, plan, threads);
  if (keys.missed()) return;
  const std::uint64_t groups = keys.groups();
  for (auto* d : a.decomposable) d->allocate(1, groups);
  for (auto* h : a.holistic) h->allocate(groups);
  parallel_for(plan.partitions, threads, [&](std::size_t p) {
    const std::size_t b = parts.start[p], e = parts.start[p + 1];
    for (auto* d : a.decomposable) {
      const auto it = parts.columns.find(d->input());
      d->update_scattered(it == parts.columns.end() ? nullptr : &it->second, parts.gid.data() + b, b, e);
    }
    const auto g0 = static_cast<std::uint32_t>(p << plan.partition_shift);
    const auto g1 =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(groups, std::uint64_t{p + 1} << plan.partition_shift));
    for (auto* h : a.holistic) h->compute(parts.columns.at(h->input()), parts.gid.data() + b, b, e, g0, g1);
  });
}

// The group ids that hold at least one row, ascending.
std::vector<std::uint32_t> occupied_groups(const std::int64_t* counts, std::uint64_t groups, int threads) {
  const std::size_t C = std::max<std::size_t>(1, std::min<std::uint64_t>(4 * threads, groups / 65536 + 1));
  threads = C > 1 ? threads : 1;
  std::vector<std::size_t> start(C + 1, 0);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t c = 0; c < C; ++c)
    for (std::uint64_t g = groups * c / C; g < groups * (c + 1) / C; ++g) start[c + 1] += counts[g] > 0;
  for (std::size_t c = 0; c < C; ++c) start[c + 1] += start[c];
  std::vector<std::uint32_t> out(start[C]);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t c = 0; c < C; ++c) {
    std::size_t at = start[c];
    for (std::uint64_t g = groups * c / C; g < groups * (c + 1) / C; ++g)
      if (counts[g] > 0) out[at++] = static_cast<std::uint32_t>(g);
  }
  return out;
}

Table result_table(const GroupKeys& keys, const Aggregators& a, const GroupBySpec& spec,
                   std::span<const std::uint32_t> present, int threads) {
  Table out;
  // Keys decoded from the input's checked columns, aggregations written here.
  for (auto& c : keys.key_columns(present, threads)) out.add(std::move(c), detail::kMadeHere);
  const std::int64_t* counts = a.rows->counts();
  for (std::size_t i = 0; i < spec.aggs.size(); ++i) {
    if (!a.by_spec[i]) {
      out.add(build_numbers<std::int64_t>(output_names(spec.aggs[i]).front(), present.size(), threads,
                                          [&](std::size_t j) { return std::optional(counts[present[j]]); }));
      continue;
    }
    for (auto& c : a.by_spec[i]->finish(present, a.present(*a.by_spec[i]), threads))
      out.add(std::move(c), detail::kMadeHere);
  }
  return out;
}

}  // namespace

Table run(const Table& input, const GroupBySpec& spec, int threads, Report& report) {
  Table out;
  run_in_pieces(input, spec, threads, report, SIZE_MAX, [&](Table t) { out = std::move(t); });
  return out;
}

void run_in_pieces(const Table& input, const GroupBySpec& spec, int threads, Report& report, std::size_t piece_groups,
                   const std::function<void(Table)>& emit) {
  if (piece_groups == 0) throw Error("group-by: pieces of 0 groups");
  const std::size_t n = input.rows();
  std::vector<const Column*> key_columns;
  for (const auto& k : spec.by) key_columns.push_back(&input.column(k));
  // Integer keys' ranges are guessed from samples, saving a pass over each key column; a key
  // outside them stops the fold, and the keys are encoded again from their bounds. Only where
  // the rows fold in row ranges: partitions split the group ids by range, and a guessed range
  // spreads the ids wider than the keys (by an eighth and 64 each side), so that the rows fell in
  // a few partitions (q6 at K = 10: 100 groups among 19,600 ids, every row in one of five
  // partitions and its medians on one thread).
  Aggregators a = make_aggregators(input, spec, report);
  const std::uint64_t slot_groups = most_slot_groups(a.state_bytes(), !a.holistic.empty());
  auto keys = std::make_unique<GroupKeys>(key_columns, n, threads, report, slot_groups);
  const auto fold = [&](const GroupKeys& keys) {
    const auto plan = plan_aggregation(n, keys.groups(), a.state_bytes(), !a.holistic.empty(), threads);
    Stopwatch w;
    if (plan.partitioned) fold_in_partitions(a, keys, n, plan, threads);
    else fold_in_slots(a, keys, n, plan, threads);
    report.add("aggregate", "cpu", w.seconds(), plan.describe());
  };
  fold(*keys);
  if (keys->missed()) {
    report.note("a key outside the range sampled: the keys encoded again from their bounds");
    keys.reset();
    keys = std::make_unique<GroupKeys>(key_columns, n, threads, report);
    fold(*keys);
  }
  Stopwatch w;
  const auto present = occupied_groups(a.rows->counts(), keys->groups(), threads);
  double building = w.seconds();
  std::size_t pieces = 0;
  for (std::size_t b = 0; b < present.size() || pieces == 0; b += piece_groups) {
    w.reset();
    const std::size_t e = std::min(present.size(), b + std::min(piece_groups, present.size() - b));
    Table piece = result_table(*keys, a, spec, std::span(present).subspan(b, e - b), threads);
    building += w.seconds();
    ++pieces;
    emit(std::move(piece));
  }
  report.add("result table", "cpu", building,
             fmt::format("{} groups in key order{}", present.size(),
                         pieces > 1 ? fmt::format(", in {} pieces", pieces) : std::string()));
}

}  // namespace tandem::cpu_groupby
