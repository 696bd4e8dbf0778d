// tandem sort data.csv --by id3,v3:desc [--nulls first|last] [--limit K] [--memory-limit BYTES]
//   [--temp-dir DIR] [--device auto|cpu|gpu] --out sorted.csv
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
  CsvSortOptions o;
  o.csv.threads = a.threads;
  if (!a.schema.empty()) o.csv.schema = parse_csv_schema(a.schema);
  o.sort.threads = a.threads;
  o.sort.device = parse_device(a.device);
  if (o.sort.device == Device::hybrid)
    throw UsageError("--device: a CSV table sorts on the cpu or the gpu (or auto), not hybrid");
  o.memory_limit = static_cast<std::size_t>(a.memory_limit);
  o.temp_dir = a.temp_dir;
  CsvSortResult r;
  try {
    r = sort_csv(a.input, spec, out.stream(), o);
  } catch (const UsageError& e) {
    const std::string what = e.what();
    // A key the header lacks is a --by problem; the other usage errors name their own subject.
    if (what.rfind("sort ", 0) == 0 || what.rfind("no column", 0) == 0) throw UsageError("--by: " + what);
    throw;
  }
  print_notices(r.report);
  Stopwatch committed;
  out.commit();
  if (a.explain) {
    r.report.add("rename output", "cpu", committed.seconds(), "the finished file moved into place");
    std::cerr << r.report.explain()
              << fmt::format("  {} of {} rows, {} in all (files included)\n", r.rows_written, r.rows_read,
                             human_seconds(total.seconds()));
  }
  return 0;
}

}  // namespace tandem::cli
