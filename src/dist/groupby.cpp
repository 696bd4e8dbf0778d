// Group-by across ranks: local partial groups (or the rows themselves when the aggregations do
// not combine), a hash shuffle so that each group has one owner, the final group-by there, and
// optionally the whole result gathered on rank 0.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "dist/exchange.hpp"
#include "dist/groupby_plan.hpp"
#include "dist/mpi_check.hpp"
#include "dist/rank_report.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/dist.hpp"

namespace tandem::dist {
namespace {

// "name type" of every column, one a line.
std::string column_list(const Table& t) {
  std::string out;
  for (const Column& c : t.columns()) out += fmt::format("{} {}\n", c.name, to_string(c.type));
  return out;
}

// Every rank must hold rank 0's columns (names, types, order): rank 0's list is sent to all, and
// the lowest rank that differs names its first differing column.
void check_same_columns(const Context& ctx, const Table& input) {
  const std::string mine = column_list(input);
  long long length = static_cast<long long>(mine.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, ctx.comm()), "MPI_Bcast");
  std::string first = ctx.rank() == 0 ? mine : std::string(static_cast<std::size_t>(length), '\0');
  check_mpi(MPI_Bcast(first.data(), int(length), MPI_CHAR, 0, ctx.comm()), "MPI_Bcast");
  ctx.run_agreed([&] {
    if (mine == first) return;
    std::size_t a = 0, b = 0, column = 1;
    for (;; ++column) {  // the first line that differs
      const std::size_t ea = mine.find('\n', a), eb = first.find('\n', b);
      const std::string here = ea == std::string::npos ? "none" : mine.substr(a, ea - a);
      const std::string there = eb == std::string::npos ? "none" : first.substr(b, eb - b);
      if (here != there)
        throw UsageError(
            fmt::format("groupby: column {} is '{}' on this rank and '{}' on rank 0 (every rank "
                        "needs the same columns and types)",
                        column, here, there));
      a = ea + 1, b = eb + 1;
    }
  });
}

std::vector<std::size_t> key_indices(const Table& t, const std::vector<std::string>& by) {
  std::vector<std::size_t> out;
  for (const auto& name : by) {
    const Column* c = t.find(name);
    std::size_t i = 0;
    while (&t.column(i) != c) ++i;
    out.push_back(i);
  }
  return out;
}

// The key columns and the aggregated ones: what a shuffle of the rows must carry.
Table used_columns(const Table& input, const GroupBySpec& spec) {
  std::vector<std::string> names = spec.by;
  for (const auto& a : spec.aggs)
    if (!a.column.empty() && std::find(names.begin(), names.end(), a.column) == names.end()) names.push_back(a.column);
  std::vector<Column> cols;
  for (const auto& n : names) cols.push_back(input.column(n));
  return Table(std::move(cols));
}

// The groups this rank's rows form, estimated from a sample of their keys.
std::uint64_t estimated_groups(const Table& t, const std::vector<std::string>& by) {
  const std::vector<std::size_t> rows = sample_rows(t.rows());
  std::vector<std::uint64_t> hashes(rows.size());
  hash_some_rows(t, key_indices(t, by), rows, hashes);
  return estimate_groups(std::move(hashes), t.rows());
}

// n bytes for the exchange to write: a Scratch vector (not zeroed first: the exchange writes all
// of them; from 2 MiB up on the scratch pool's huge pages, whose reuse spares the page faults),
// kept alive by the tables that borrow from it.
std::shared_ptr<std::byte> receive_buffer(std::size_t n) {
  auto bytes = std::make_shared<Scratch<std::byte>>(n);
  return std::shared_ptr<std::byte>(bytes, bytes->data());
}

// Sends counts[d] bytes of `send` (serialised tables, back to back) to rank d and reads the
// tables received, columns shaped like t's.
Table exchange_tables(const Context& ctx, const std::byte* send, const std::vector<std::uint64_t>& counts,
                      const Table& t, Traffic& traffic) {
  std::shared_ptr<std::byte> received;
  std::uint64_t size = 0;
  std::vector<std::uint64_t> recv_counts;
  const Traffic moved = exchange_bytes(ctx.impl(), send, counts, recv_counts, [&](std::uint64_t n) {
    size = n;
    received = receive_buffer(n);
    return received.get();
  });
  traffic.bytes_sent += moved.bytes_sent;
  traffic.bytes_received += moved.bytes_received;
  return read_tables(received, size, t, ctx.threads());
}

// Sends every row of `t` to the rank its keys hash to; returns the rows received, in
// source-rank order (each rank's rows keep their order). The rows for each rank are written
// straight into the send buffer (no gathered tables), on the rank's threads.
Table shuffle_rows(const Context& ctx, const Table& t, const std::vector<std::string>& by, Traffic& traffic) {
  const auto p = static_cast<std::size_t>(ctx.size());
  const std::vector<std::size_t> keys = key_indices(t, by);
  std::vector<std::uint64_t> hashes(t.rows());
  hash_rows(t, keys, hashes, ctx.threads());
  std::vector<std::size_t> starts(p + 1, 0), order(t.rows());
  for (const std::uint64_t h : hashes) ++starts[h % p + 1];
  for (std::size_t d = 0; d < p; ++d) starts[d + 1] += starts[d];
  std::vector<std::size_t> next(starts.begin(), starts.end() - 1);
  for (std::size_t i = 0; i < hashes.size(); ++i) order[next[hashes[i] % p]++] = i;  // stable by destination
  hashes = {};
  const TableImages images = write_table_images(t, order, starts, ctx.threads());
  return exchange_tables(ctx, images.bytes.data(), images.sizes, t, traffic);
}

// Rank 0 receives every rank's table (in rank order); the others get an empty table.
Table gather_to_first(const Context& ctx, const Table& t, Traffic& traffic) {
  std::vector<std::byte> send;
  if (t.rows() > 0) write_table(t, send);
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(ctx.size()), 0);
  counts[0] = send.size();
  return exchange_tables(ctx, send.data(), counts, t, traffic);
}

// The result rows ordered by the keys: a group-by taking each (already distinct) group's values.
Table sort_by_keys(const Table& t, const std::vector<std::string>& by, const GroupByOptions& options) {
  GroupBySpec spec{by, {}};
  for (const Column& c : t.columns())
    if (std::find(by.begin(), by.end(), c.name) == by.end())
      spec.aggs.push_back({AggOp::first, c.name, 0.5, 1, c.name});
  if (spec.aggs.empty()) spec.aggs.push_back({AggOp::count_rows, {}, 0.5, 1, "__rows"});
  Table sorted = tandem::groupby(t, spec, options).table;
  if (sorted.find("__rows") == nullptr) return sorted;
  std::vector<Column> cols;
  for (const Column& c : sorted.columns())
    if (c.name != "__rows") cols.push_back(c);
  return Table(std::move(cols));
}

}  // namespace

GroupByResult groupby(const Context& ctx, const Table& input, const GroupBySpec& spec, const GroupByOptions& given,
                      bool gather) {
  GroupByOptions options = given;
  if (options.threads <= 0) options.threads = ctx.threads();  // the host's cores shared by its ranks
  GroupByResult out;
  Report& report = out.report.report;
  report.operation = "dist groupby";
  out.report.count_in = input.rows();
  check_same_columns(ctx, input);
  const CombinePlan plan = plan_combine(spec.aggs);
  StageClock clock;

  // Aggregations that combine still shuffle the rows as they are when partial groups would
  // barely shrink them (about a group per row): the groups are estimated from a sample of each
  // rank's keys and summed over the ranks (integers: every rank takes the same path).
  std::uint64_t counts[2] = {0, input.rows()};  // estimated groups, rows
  ctx.run_agreed([&] {
    for (const auto& k : spec.by) (void)input.column(k);  // UsageError naming a missing key column
    if (plan.combinable) counts[0] = estimated_groups(input, spec.by);
  });
  bool combine = plan.combinable;
  if (combine) {
    std::uint64_t all[2];
    check_mpi(MPI_Allreduce(counts, all, 2, MPI_UINT64_T, MPI_SUM, ctx.comm()), "MPI_Allreduce");
    combine = !shuffle_rows_instead(all[0], all[1]);
    report.note(fmt::format("about {} groups in {} rows over all ranks (estimated from samples): {}", all[0], all[1],
                            combine ? "partial groups on each rank" : "rows shuffled as they are"));
  }

  Table local;
  ctx.run_agreed([&] {
    local = combine ? tandem::groupby(input, {spec.by, plan.partial}, options).table : used_columns(input, spec);
  });
  clock.lap(report, "local groupby",
            combine ? fmt::format("{} rows to {} partial groups", input.rows(), local.rows())
                    : fmt::format("none: rows are shuffled as they are ({})",
                                  plan.combinable ? "about a group per row" : "aggregations that do not combine"));

  Table mine = shuffle_rows(ctx, local, spec.by, out.report.traffic);
  clock.lap(report, "shuffle", fmt::format("{} rows received", mine.rows()));

  ctx.run_agreed([&] {
    if (combine) {
      tandem::GroupByResult final_groups = tandem::groupby(mine, {spec.by, plan.final}, options);
      out.table = combined_result(final_groups.table, spec.by, plan);
    } else {
      out.table = tandem::groupby(mine, spec, options).table;
    }
  });
  clock.lap(report, "final groupby", fmt::format("{} groups", out.table.rows()));

  if (gather) {
    Table all = gather_to_first(ctx, out.table, out.report.traffic);
    ctx.run_agreed([&] { out.table = ctx.rank() == 0 ? sort_by_keys(all, spec.by, options) : empty_like(out.table); });
    clock.lap(report, "gather", fmt::format("{} groups on rank 0", out.table.rows()));
  }
  report.note(combine           ? "partial groups combined on each group's owner"
              : plan.combinable ? "rows shuffled to each group's owner (about a group per row)"
                                : "rows shuffled to each group's owner (an aggregation does not combine)");
  out.report.count_out = out.table.rows();
  gather_rank_report(ctx.impl(), out.report);
  return out;
}

}  // namespace tandem::dist
