// tandem sort data.csv --by id3,v3:desc [--nulls first|last] [--limit K] --out sorted.csv
#include <iostream>

#include <fmt/format.h>

#include "command.hpp"
#include "sort_table.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::cli {

int run_table_sort(const TableSortArgs& a) {
  if (a.input.empty()) throw UsageError("sort by --by needs a CSV input file");
  if (a.by.empty()) throw UsageError("sorting a CSV file needs --by (key columns, e.g. id3,v3:desc)");
  if (a.out.empty()) throw UsageError("sort needs --out FILE (- for standard output)");
  if (a.nulls != "last" && a.nulls != "first")
    throw UsageError(fmt::format("--nulls must be first or last (got '{}')", a.nulls));
  SortSpec spec;
  try {
    spec.by = parse_sort_keys(a.by);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--by: {}", e.what()));
  }
  spec.nulls = a.nulls == "first" ? NullOrder::first : NullOrder::last;
  if (a.limit) spec.limit = static_cast<std::size_t>(*a.limit);
  io::AtomicOutput out(a.out);  // an unwritable destination fails before anything is read
  Stopwatch total;
  CsvOptions csv;
  csv.threads = a.threads;
  if (!a.schema.empty()) csv.schema = parse_csv_schema(a.schema);
  const Table input = read_csv(a.input, csv);
  const double read_s = total.seconds();
  TableSortOptions o;
  o.threads = a.threads;
  TableSortResult r;
  try {
    r = sort(input, spec, o);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("--by: {}", e.what()));
  }
  print_notices(r.report);
  Stopwatch written;
  write_csv(out.stream(), r.table);
  out.commit();
  if (a.explain) {
    r.report.stages.insert(
        r.report.stages.begin(),
        {"read input", "cpu", read_s, fmt::format("{} rows, {} columns (CSV)", input.rows(), input.num_columns())});
    r.report.add("write output", "cpu", written.seconds(),
                 fmt::format("{} rows (CSV), then renamed into place", r.table.rows()));
    std::cerr << r.report.explain()
              << fmt::format("  {} of {} rows, {} in all (files included)\n", r.table.rows(), input.rows(),
                             human_seconds(total.seconds()));
  }
  return 0;
}

}  // namespace tandem::cli
