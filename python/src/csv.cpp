// tandem.read_csv, and CSV paths for tandem.groupby: tandem::read_csv (include/tandem/table/csv.hpp).
// Bound only when the library has the CSV reader; the package says so otherwise.
#include "common.hpp"
#include "table.hpp"

#if __has_include("tandem/table/csv.hpp")
#include "tandem/table/csv.hpp"

namespace tandem::python {

void bind_csv(py::module_& m) {
  m.def(
      "_read_csv",
      [](const std::string& path, const std::string& schema, const std::string& delimiter, int threads) {
        CsvOptions o;
        if (!schema.empty()) o.schema = parse_csv_schema(schema);
        if (delimiter.size() > 1) throw py::value_error("read_csv: the delimiter must be one character");
        o.delimiter = delimiter.empty() ? '\0' : delimiter[0];
        o.threads = threads;
        Table t = without_gil([&] { return read_csv(path, o); });
        return table_to_python(t);
      },
      py::arg("path"), py::arg("schema"), py::arg("delimiter"), py::arg("threads"),
      "tandem::read_csv: the file's columns (table.hpp's tuples).");
}

}  // namespace tandem::python
#else
namespace tandem::python {
void bind_csv(py::module_&) {}
}  // namespace tandem::python
#endif
