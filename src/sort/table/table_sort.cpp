// tandem::sort and tandem::argsort of tables: normalised keys, a row order, one gather.
#include <algorithm>

#include <fmt/format.h>

#include "gpu_sort.hpp"
#include "key_layout.hpp"
#include "row_order.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/table_sort.hpp"

namespace tandem {

std::vector<SortKey> parse_sort_keys(std::string_view text) {
  std::vector<SortKey> keys;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view part = text.substr(at, comma - at);
    const std::size_t colon = part.rfind(':');
    SortKey k{std::string(part.substr(0, colon))};
    if (colon != std::string_view::npos) {
      const auto dir = part.substr(colon + 1);
      if (dir == "desc") k.order = SortOrder::descending;
      else if (dir != "asc")
        throw UsageError(fmt::format("sort key '{}': the direction must be asc or desc (got '{}')", part, dir));
    }
    if (k.column.empty()) throw UsageError(fmt::format("sort keys '{}': an empty column name", text));
    keys.push_back(std::move(k));
    at = comma + 1;
  }
  return keys;
}

namespace {

// Threads for a table of n rows: small tables run on one (waking a team costs more than the work).
int threads_for(const TableSortOptions& options, std::size_t n) {
  const int T = options.threads > 0 ? options.threads : default_threads();
  return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(T), 1 + n / 16384));
}

std::vector<std::size_t> cpu_row_order(const Table& table, const SortSpec& spec, const TableSortOptions& options,
                                       Report& report) {
  const int T = threads_for(options, table.rows());
  Stopwatch sw;
  auto layout = detail::plan_key_layout(table, spec, options);
  auto keys = detail::encode_keys(table, layout, T);
  report.note(describe(layout, table));
  const std::size_t dropped = detail::drop_constant_bytes(layout, keys, T);
  report.add("encode keys", "cpu", sw.seconds(),
             fmt::format("{} rows, {}{}", table.rows(), human_bytes(keys.data.size() * sizeof(std::uint64_t)),
                         dropped ? fmt::format(" ({} bytes equal in every row dropped)", dropped) : ""));
  Stopwatch order;
  std::vector<std::size_t> rows;
  if (spec.limit && *spec.limit < table.rows()) {
    rows = detail::first_rows(table, layout, keys, *spec.limit, T);
    report.add("select first rows", "cpu", order.seconds(),
               fmt::format("the first {} of {} rows, without sorting the rest", rows.size(), table.rows()));
  } else {
    rows = detail::sorted_row_order(table, layout, keys, T);
    report.add("sort keys", "cpu", order.seconds(),
               fmt::format("radix sort of the key words with row indices, {} thread{}{}", T, T == 1 ? "" : "s",
                           layout.first_tie_break >= 0 ? "; prefix ties ordered by whole strings" : ""));
  }
  return rows;
}

std::vector<std::size_t> row_order(const Table& table, const SortSpec& spec, const TableSortOptions& options,
                                   Report& report) {
  if (detail::table_sort_on_gpu(options.device, table.rows())) {
    try {
      if (auto rows = detail::gpu_row_order(table, spec, options, report)) return std::move(*rows);
    } catch (const NoDeviceError& e) {
      if (options.device == Device::gpu) throw;
      report.note(fmt::format("table sort: {}; sorted on the CPU", e.what()));
    }
  }
  return cpu_row_order(table, spec, options, report);
}

}  // namespace

ArgsortResult argsort(const Table& table, const SortSpec& spec, const TableSortOptions& options) {
  ArgsortResult r;
  r.report.operation = "argsort";
  r.rows = row_order(table, spec, options, r.report);
  return r;
}

TableSortResult sort(const Table& table, const SortSpec& spec, const TableSortOptions& options) {
  TableSortResult r;
  r.report.operation = "sort";
  const auto rows = row_order(table, spec, options, r.report);
  Stopwatch sw;
  r.table = detail::gather_rows(table, rows, threads_for(options, rows.size()));
  r.report.add("gather", "cpu", sw.seconds(),
               fmt::format("{} columns x {} rows in key order", table.num_columns(), rows.size()));
  return r;
}

}  // namespace tandem
