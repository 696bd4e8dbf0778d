// tandem::argsort of tables for tandem.sort_values: the key columns cross (table.hpp's tuples),
// the row order comes back, and pandas takes the rows (every dtype and the index kept as they are).
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.hpp"
#include "table.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::python {
namespace {

py::tuple sort_rows(const py::sequence& columns, const std::vector<std::pair<std::string, bool>>& keys,
                    bool nulls_first, std::optional<std::size_t> limit, int threads, std::string_view device) {
  const Table table = table_from_python(columns);
  SortSpec spec;
  for (const auto& [name, descending] : keys)
    spec.by.push_back({name, descending ? SortOrder::descending : SortOrder::ascending});
  spec.nulls = nulls_first ? NullOrder::first : NullOrder::last;
  spec.limit = limit;
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

}  // namespace

void bind_table_sort(py::module_& m) {
  m.def("_sort_rows", &sort_rows, py::arg("columns"), py::arg("keys"), py::arg("nulls_first"), py::arg("limit"),
        py::arg("threads"), py::arg("device") = "cpu",
        "tandem::argsort of columns (table.hpp's tuples) by (name, descending) keys: (row order as int64, Report); "
        "device: where the order is found (auto, cpu or gpu).");
}

}  // namespace tandem::python
