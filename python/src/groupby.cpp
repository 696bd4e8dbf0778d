// tandem.groupby on host tables: tandem::groupby over columns lent by numpy (table.hpp).

#include "tandem/groupby.hpp"
#include "common.hpp"
#include "table.hpp"
#include "tandem/device_table.hpp"
#include "tandem/groupby_csv.hpp"

namespace tandem::python {
namespace {

// Aggregations from tandem's text form ("sum(v1),count()") or from (op, column, q, n, name) tuples.
std::vector<Aggregation> aggregations(const py::handle& aggs) {
  if (py::isinstance<py::str>(aggs)) return parse_aggregations(aggs.cast<std::string>());
  std::vector<Aggregation> out;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(aggs)) {
    const auto t = py::reinterpret_borrow<py::tuple>(item);
    Aggregation a;
    a.op = t[0].cast<AggOp>();
    a.column = t[1].cast<std::string>();
    a.q = t[2].cast<double>();
    a.n = t[3].cast<std::size_t>();
    a.name = t[4].cast<std::string>();
    out.push_back(std::move(a));
  }
  return out;
}

GroupByOptions groupby_options(std::string_view device, int threads) {
  GroupByOptions o;
  o.device = device_arg(device);
  o.threads = threads;
  return o;
}

py::tuple groupby_tables(const py::sequence& columns, const std::vector<std::string>& by, const py::handle& aggs,
                         std::string_view device, int threads) {
  const Table input = table_from_python(columns);
  GroupBySpec spec{.by = by, .aggs = aggregations(aggs)};
  const GroupByOptions o = groupby_options(device, threads);
  GroupByResult r = without_gil([&] { return groupby(input, spec, o); });
  return py::make_tuple(table_to_python(r.table), std::move(r.report));
}

// tandem::groupby_csv: the file streamed, only the named columns read (device gpu, or auto where
// the GPU is estimated faster: read into GPU memory, parsed and grouped there).
py::tuple groupby_csv_file(const std::string& path, const std::vector<std::string>& by, const py::handle& aggs,
                           std::string_view device, int threads) {
  GroupBySpec spec{.by = by, .aggs = aggregations(aggs)};
  GroupByCsvOptions o;
  o.csv.threads = threads;
  o.device = device_arg(device);
  GroupByResult r = without_gil([&] { return groupby_csv(path, spec, o); });
  return py::make_tuple(table_to_python(r.table), std::move(r.report));
}

// A DeviceTable keeps the host table it came from (and so the numpy arrays it borrows) alive; a
// group-by's result on the device keeps the table it came from alive.
struct PyDeviceTable {
  Table host;
  DeviceTable table;
  py::object parent;
};

std::unique_ptr<PyDeviceTable> upload(const py::sequence& columns, int threads) {
  Table host = table_from_python(columns);
  auto t = without_gil([&] { return DeviceTable(host, {}, threads); });
  return std::make_unique<PyDeviceTable>(PyDeviceTable{std::move(host), std::move(t), py::none()});
}

py::tuple groupby_device_table(const PyDeviceTable& t, const std::vector<std::string>& by, const py::handle& aggs,
                               std::string_view device, int threads) {
  GroupBySpec spec{.by = by, .aggs = aggregations(aggs)};
  const GroupByOptions o = groupby_options(device, threads);
  GroupByResult r = without_gil([&] { return groupby(t.table, spec, o); });
  return py::make_tuple(table_to_python(r.table), std::move(r.report));
}

// Columns in GPU memory (name, tandem type name such as "i32", device pointer), used in place; the
// arrays (`owners`) stay referenced by the table.
std::unique_ptr<PyDeviceTable> borrow(const std::vector<std::tuple<std::string, std::string, std::uintptr_t>>& columns,
                                      std::size_t rows, const py::object& owners, int threads) {
  std::vector<DeviceColumnView> views;
  for (const auto& [name, type, ptr] : columns)
    views.push_back({name, parse_column_type(type), reinterpret_cast<const void*>(ptr), nullptr, 0, {}});
  auto t = without_gil([&] { return DeviceTable::borrow(std::move(views), rows, threads); });
  return std::make_unique<PyDeviceTable>(PyDeviceTable{Table{}, std::move(t), owners});
}

// Each column's (name, type name, device pointer, validity bitmap pointer or 0, missing rows).
py::list device_columns(const PyDeviceTable& t) {
  py::list out;
  for (const auto& c : t.table.schema().columns()) {
    const DeviceColumnView v = t.table.column_view(c.name);
    out.append(py::make_tuple(v.name, std::string(to_string(v.type)), reinterpret_cast<std::uintptr_t>(v.data),
                              reinterpret_cast<std::uintptr_t>(v.validity), v.missing));
  }
  return out;
}

py::tuple groupby_on_device_table(const py::object& self, const std::vector<std::string>& by, const py::handle& aggs,
                                  std::string_view device, int threads) {
  const auto& t = self.cast<const PyDeviceTable&>();
  GroupBySpec spec{.by = by, .aggs = aggregations(aggs)};
  const GroupByOptions o = groupby_options(device, threads);
  DeviceGroupByResult r = without_gil([&] { return groupby_on_device(t.table, spec, o); });
  auto result = std::make_unique<PyDeviceTable>(PyDeviceTable{Table{}, std::move(r.table), self});
  return py::make_tuple(std::move(result), std::move(r.report));
}

}  // namespace

void bind_groupby(py::module_& m) {
  py::enum_<AggOp>(m, "AggOp", "The aggregations of tandem::groupby.")
      .value("count_rows", AggOp::count_rows)
      .value("count", AggOp::count)
      .value("sum", AggOp::sum)
      .value("mean", AggOp::mean)
      .value("min", AggOp::min)
      .value("max", AggOp::max)
      .value("var", AggOp::var)
      .value("std", AggOp::std)
      .value("first", AggOp::first)
      .value("last", AggOp::last)
      .value("nunique", AggOp::nunique)
      .value("median", AggOp::median)
      .value("quantile", AggOp::quantile)
      .value("top", AggOp::top);
  m.def(
      "_parse_aggregations",
      [](const std::string& text) {
        py::list out;
        for (const auto& a : parse_aggregations(text)) out.append(py::make_tuple(a.op, a.column, a.q, a.n, a.name));
        return out;
      },
      py::arg("text"), "tandem::parse_aggregations: (op, column, q, n, name) tuples.");
  m.def("_groupby", &groupby_tables, py::arg("columns"), py::arg("by"), py::arg("aggs"), py::arg("device"),
        py::arg("threads"), "tandem::groupby of columns (table.hpp's tuples): (result columns, Report).");
  m.def("_groupby_csv", &groupby_csv_file, py::arg("path"), py::arg("by"), py::arg("aggs"), py::arg("device"),
        py::arg("threads"), "tandem::groupby_csv: (result columns, Report).");
  py::class_<PyDeviceTable>(m, "_DeviceTable", "tandem::DeviceTable: columns uploaded to the GPU once.")
      .def(py::init(&upload), py::arg("columns"), py::arg("threads"))
      .def_property_readonly("rows", [](const PyDeviceTable& t) { return t.table.rows(); })
      .def_property_readonly("device_bytes", [](const PyDeviceTable& t) { return t.table.device_bytes(); })
      .def_property_readonly("upload_seconds", [](const PyDeviceTable& t) { return t.table.upload_seconds(); })
      .def_property_readonly("columns",
                             [](const PyDeviceTable& t) {
                               std::vector<std::string> names;
                               for (const auto& c : t.table.schema().columns()) names.push_back(c.name);
                               return names;
                             })
      .def_static("borrow", &borrow, py::arg("columns"), py::arg("rows"), py::arg("owners"), py::arg("threads"),
                  "tandem::DeviceTable::borrow of columns in GPU memory.")
      .def("device_columns", &device_columns, "Each column's device memory: (name, type, data, validity, missing).")
      .def("groupby", &groupby_device_table, py::arg("by"), py::arg("aggs"), py::arg("device"), py::arg("threads"))
      .def("groupby_on_device", &groupby_on_device_table, py::arg("by"), py::arg("aggs"), py::arg("device"),
           py::arg("threads"), "tandem::groupby_on_device: (_DeviceTable of the result, Report).")
      .def(
          "to_host",
          [](const PyDeviceTable& t) {
            const Table& host = without_gil([&]() -> const Table& { return t.table.host(); });
            return table_to_python(host);
          },
          "The columns on the host (a result's are downloaded once, on the first call).");
  m.def(
      "_generate_groupby",
      [](std::size_t rows, std::size_t k, double nas_percent, bool sorted, std::uint64_t seed) {
        GroupByDataSpec s{.rows = rows, .k = k, .nas_percent = nas_percent, .sorted = sorted, .seed = seed};
        Table t = without_gil([&] { return generate_groupby_table(s); });
        return table_to_python(t);
      },
      py::arg("rows"), py::arg("k"), py::arg("nas_percent"), py::arg("sorted"), py::arg("seed"),
      "The db-benchmark group-by table (tandem::generate_groupby_table) as columns.");
}

}  // namespace tandem::python
