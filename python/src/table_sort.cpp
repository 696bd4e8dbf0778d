// tandem::argsort of tables for tandem.sort_values: the key columns cross (table.hpp's tuples),
// the row order comes back, and pandas takes the rows (every dtype and the index kept as they are).
// tandem::sort_csv for tandem.sort_csv: file to file, nothing crosses but the paths.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.hpp"
#include "table.hpp"
#include "tandem/core/io.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::python {
namespace {

// The SortSpec of (name, descending) keys.
SortSpec spec_of(const std::vector<std::pair<std::string, bool>>& keys, bool nulls_first,
                 std::optional<std::size_t> limit) {
  SortSpec spec;
  for (const auto& [name, descending] : keys)
    spec.by.push_back({name, descending ? SortOrder::descending : SortOrder::ascending});
  spec.nulls = nulls_first ? NullOrder::first : NullOrder::last;
  spec.limit = limit;
  return spec;
}

py::tuple sort_rows(const py::sequence& columns, const std::vector<std::pair<std::string, bool>>& keys,
                    bool nulls_first, std::optional<std::size_t> limit, int threads, std::string_view device) {
  const Table table = table_from_python(columns);
  const SortSpec spec = spec_of(keys, nulls_first, limit);
  TableSortOptions o;
  o.threads = threads;
  o.device = device_arg(device);
  auto r = [&] {
    py::gil_scoped_release unlocked;
    return argsort(table, spec, o);
  }();
  auto rows = std::make_shared<std::vector<std::size_t>>(std::move(r.rows));
  static_assert(sizeof(std::size_t) == sizeof(std::int64_t));
  auto out = array_over(reinterpret_cast<const std::int64_t*>(rows->data()), rows->size(), rows);
  return py::make_tuple(std::move(out), std::move(r.report));
}

// tandem::sort_csv from one file into another (written to a temporary name and renamed at the
// end, so that a failure leaves no output): (rows written, rows read, runs, Report).
py::tuple sort_csv_file(const std::string& in_path, const std::string& out_path,
                        const std::vector<std::pair<std::string, bool>>& keys, bool nulls_first,
                        std::optional<std::size_t> limit, std::size_t memory_limit, const std::string& temp_dir,
                        const std::string& schema, const std::string& delimiter, int threads) {
  const SortSpec spec = spec_of(keys, nulls_first, limit);
  CsvSortOptions o;
  if (!schema.empty()) o.csv.schema = parse_csv_schema(schema);
  if (delimiter.size() > 1) throw py::value_error("sort_csv: the delimiter must be one character");
  o.csv.delimiter = delimiter.empty() ? '\0' : delimiter[0];
  o.csv.threads = threads;
  o.sort.threads = threads;
  o.sort.nan_is_missing = true;  // pandas' missing values
  o.memory_limit = memory_limit;
  o.temp_dir = temp_dir;
  auto r = without_gil([&] {
    io::AtomicOutput out(out_path);
    auto result = sort_csv(in_path, spec, out.stream(), o);
    out.commit();
    return result;
  });
  return py::make_tuple(r.rows_written, r.rows_read, r.runs, std::move(r.report));
}

}  // namespace

void bind_table_sort(py::module_& m) {
  m.def("_sort_rows", &sort_rows, py::arg("columns"), py::arg("keys"), py::arg("nulls_first"), py::arg("limit"),
        py::arg("threads"), py::arg("device") = "cpu",
        "tandem::argsort of columns (table.hpp's tuples) by (name, descending) keys: (row order as int64, Report); "
        "device: where the order is found (auto, cpu or gpu).");
  m.def("_sort_csv", &sort_csv_file, py::arg("in_path"), py::arg("out_path"), py::arg("keys"), py::arg("nulls_first"),
        py::arg("limit"), py::arg("memory_limit"), py::arg("temp_dir"), py::arg("schema"), py::arg("delimiter"),
        py::arg("threads"),
        "tandem::sort_csv of one file into another by (name, descending) keys: (rows written, rows read, runs, "
        "Report).");
}

}  // namespace tandem::python
