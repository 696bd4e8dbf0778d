#include "groupby/sink/partitioned_combine.hpp"

#include <algorithm>
#include <bit>

#include "core/scratch.hpp"
#include "groupby/sink/hash_partitions.hpp"
#include "groupby/sink/running_groups.hpp"
#include "sort/table/row_order.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::sink {
namespace {

constexpr std::size_t kPartitionRows = std::size_t{1} << 15;  // a partition's table, keys and states fit L2
constexpr std::size_t kMinRows = std::size_t{1} << 16;        // below: the engine over them all is as quick
constexpr int kMaxPartitionBits = 12;
// Running groups merged into the largest table (RunningGroups::absorb) rather than partition by
// partition: at most this many tables, of whose groups at most this share is new to it.
constexpr std::size_t kMostAbsorbed = 2;
constexpr double kMostMissing = 0.25;

// The plan with its final aggregations where running groups look for the partial ones.
SinkPlan final_plan(const SinkPlan& plan) {
  SinkPlan f = plan;
  f.partial = plan.final;
  return f;
}

// Each partition's rows: rows[starts[p] .. starts[p + 1]), in input order (so that float sums
// add up in chunk order, as the engine over every row would). The partition is the hash's top
// bits: running groups place a row by the low ones.
struct Partitions {
  std::vector<std::size_t> rows, starts;
};

Partitions split_by_hash(const Table& partials, std::size_t keys, int threads) {
  const std::size_t n = partials.rows();
  std::vector<std::size_t> key_columns(keys);
  for (std::size_t k = 0; k < keys; ++k) key_columns[k] = k;
  Scratch<std::uint64_t> hashes(n);
  hash_rows(partials, key_columns, hashes, threads);
  Partitions p{std::vector<std::size_t>(n), {}};
  p.starts = order_by_top_bits(std::span<const std::uint64_t>(hashes), partition_bits(n, threads), p.rows.data());
  return p;
}

// The partitions' groups joined and put in key order.
Table in_key_order(std::vector<Table>& groups, const SinkPlan& plan, int threads) {
  std::vector<Table> made;
  for (Table& t : groups)
    if (t.num_columns() > 0) made.push_back(std::move(t));
  groups.clear();
  const Table joined = concat_tables(made, made.front(), threads);
  made.clear();
  SortSpec order;
  for (const auto& k : plan.spec.by) order.by.push_back({k});
  TableSortOptions how;
  how.threads = threads;
  return tandem::sort(joined, order, how).table;
}

// The final plan's columns of merged running groups: their partial columns, whose states were
// merged as the final aggregations would fold them, under the final aggregations' names.
Table as_final_groups(const Table& merged, const SinkPlan& plan) {
  Table out;
  for (const auto& k : plan.spec.by) out.add(merged.column(k));
  for (std::size_t i = 0; i < plan.final.aggs.size(); ++i) {
    Column c = merged.column(output_names(plan.partial.aggs[i]).front());
    c.name = output_names(plan.final.aggs[i]).front();
    out.add(std::move(c));
  }
  return out;
}

}  // namespace

int partition_bits(std::size_t rows, int threads) {
  const std::size_t wanted = std::max<std::size_t>(rows / kPartitionRows, 4 * static_cast<std::size_t>(threads));
  return std::clamp(static_cast<int>(std::bit_width(wanted - 1)), 1, kMaxPartitionBits);
}

bool combines_by_partition(const SinkPlan& plan, const Table& partials, std::size_t rows, bool from_running) {
  if (rows < kMinRows) return false;
  // The engine groups integer keys by radix passes faster than they are split and gathered;
  // string keys it ranks first, which costs more than folding them partition by partition.
  const bool string_key = std::any_of(plan.spec.by.begin(), plan.spec.by.end(),
                                      [&](const std::string& k) { return partials.column(k).type == ColumnType::str; });
  if (!string_key && !from_running) return false;
  for (const auto& o : plan.combine.outputs)
    if (o.kind == CombinePlan::Output::Kind::var || o.kind == CombinePlan::Output::Kind::std) return false;
  return keeps_running_groups(final_plan(plan), partials);
}

Table final_groups_by_partition(const Table& partials, const SinkPlan& plan, int threads) {
  const SinkPlan f = final_plan(plan);
  const Partitions parts = split_by_hash(partials, plan.spec.by.size(), threads);
  std::vector<Table> groups(parts.starts.size() - 1);
  parallel_for(groups.size(), threads, [&](std::size_t q) {
    const std::span<const std::size_t> rows(parts.rows.data() + parts.starts[q], parts.starts[q + 1] - parts.starts[q]);
    if (rows.empty()) return;
    // Prefetched: a partition's rows lie all over the partial groups.
    const Table part = detail::gather_rows(partials, rows, 1);
    RunningGroups g(f, part);
    g.reserve(rows.size());
    g.add(part);
    groups[q] = g.take();
  });
  return in_key_order(groups, plan, threads);
}

Table final_groups_from_running(std::vector<std::unique_ptr<RunningGroups>>& tables, const SinkPlan& plan,
                                const Table& input, int threads, std::vector<Stage>* steps, bool* into_largest) {
  if (into_largest) *into_largest = false;
  Stopwatch merging;
  if (tables.empty()) throw Error("partitioned combine: no running groups");
  if (plan.final.aggs.size() != plan.partial.aggs.size())
    throw Error("partitioned combine: final aggregations that are not the partial ones merged");
  if (tables.size() <= kMostAbsorbed) {
    // The largest table takes in the others where they hold mostly its keys: half the groups of
    // two tables looked up instead of all of them made anew, and no partition tables to join.
    std::sort(tables.begin(), tables.end(), [](const auto& a, const auto& b) { return a->groups() > b->groups(); });
    Stopwatch absorbing;
    while (tables.size() > 1 && tables.front()->absorb(*tables.back(), threads, kMostMissing)) tables.pop_back();
    if (tables.size() == 1) {
      std::vector<Table> one;
      one.push_back(as_final_groups(tables.front()->take(), plan));
      tables.clear();
      const double absorbed = absorbing.seconds();
      Stopwatch ordering;
      Table out = in_key_order(one, plan, threads);
      if (into_largest) *into_largest = true;
      if (steps) {
        steps->push_back({"merge into the largest table", "cpu", absorbed, {}});
        steps->push_back({"key order", "cpu", ordering.seconds(), {}});
      }
      return out;
    }
  }
  std::size_t held = 0;
  for (const auto& t : tables) held += t->groups();
  const int bits = partition_bits(held, threads);
  std::vector<GroupPartitions> parts(tables.size());
  parallel_for(tables.size(), threads, [&](std::size_t t) { parts[t] = tables[t]->partitions(bits); });
  std::vector<Table> groups(std::size_t{1} << bits);
  parallel_for(groups.size(), threads, [&](std::size_t q) {
    std::size_t largest = 0;
    for (const GroupPartitions& p : parts) largest = std::max(largest, p.starts[q + 1] - p.starts[q]);
    if (largest == 0) return;
    // Room for the largest table's share: the groups are at least as many, and at most the sum
    // of the shares; reserving the sum zeroed room that 16 threads' shared keys never fill.
    RunningGroups g(plan, input);
    g.reserve(largest);
    for (std::size_t t = 0; t < tables.size(); ++t) {
      const GroupPartitions& p = parts[t];
      g.merge(*tables[t], std::span<const std::uint32_t>(p.ids.data() + p.starts[q], p.starts[q + 1] - p.starts[q]));
    }
    groups[q] = as_final_groups(g.take(), plan);
  });
  parts.clear();
  tables.clear();
  const double merged = merging.seconds();
  Stopwatch ordering;
  Table out = in_key_order(groups, plan, threads);
  if (steps) {
    steps->push_back({"merge partitions", "cpu", merged, {}});
    steps->push_back({"key order", "cpu", ordering.seconds(), {}});
  }
  return out;
}

}  // namespace tandem::sink
