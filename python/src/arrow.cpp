// The Arrow PyCapsule protocol over tandem::Table (include/tandem/table/arrow.hpp).
#include "arrow.hpp"

#include <fmt/format.h>

#include "table.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/arrow.hpp"

namespace tandem::python {
namespace {

template <class T>
T* capsule_pointer(const py::handle& capsule, const char* name) {
  auto* p = static_cast<T*>(PyCapsule_GetPointer(capsule.ptr(), name));
  if (!p) {
    PyErr_Clear();
    throw py::type_error(fmt::format("expected a PyCapsule named '{}' (the Arrow PyCapsule protocol), got {}", name,
                                     Py_TYPE(capsule.ptr())->tp_name));
  }
  return p;
}

ArrowImportOptions import_options(const py::object& columns, bool codes, std::string name = {}) {
  ArrowImportOptions o;
  if (!columns.is_none()) o.columns = columns.cast<std::vector<std::string>>();
  if (codes) o.dictionaries = ArrowImportOptions::Dictionaries::codes;
  o.column_name = std::move(name);
  return o;
}

// The consumer moves the stream out of the capsule (the protocol's rule): the capsule's destructor
// then finds it released.
Table table_of_stream(const py::handle& capsule, const ArrowImportOptions& o) {
  auto* s = capsule_pointer<ArrowArrayStream>(capsule, "arrow_array_stream");
  ArrowArrayStream moved = *s;
  s->release = nullptr;
  return table_from_arrow_stream(&moved, o);
}

Table table_of_array(const py::handle& schema_capsule, const py::handle& array_capsule, const ArrowImportOptions& o) {
  const auto* schema = capsule_pointer<ArrowSchema>(schema_capsule, "arrow_schema");
  auto* array = capsule_pointer<ArrowArray>(array_capsule, "arrow_array");
  return table_from_arrow(array, *schema, o);  // moves the array out of its capsule
}

template <class T>
void release_capsule(PyObject* capsule, const char* name) {
  auto* p = static_cast<T*>(PyCapsule_GetPointer(capsule, name));
  if (!p) {
    PyErr_Clear();
    return;
  }
  if (p->release) p->release(p);
  delete p;
}

py::object new_capsule(void* p, const char* name, PyCapsule_Destructor d) {
  PyObject* c = PyCapsule_New(p, name, d);
  if (!c) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(c);
}

py::object schema_capsule(const Table& t) {
  auto* s = new ArrowSchema{};
  export_arrow_schema(t, s);
  return new_capsule(s, "arrow_schema", [](PyObject* c) { release_capsule<ArrowSchema>(c, "arrow_schema"); });
}

py::tuple array_capsules(const Table& t) {
  auto* a = new ArrowArray{};
  export_arrow(t, a, nullptr);
  auto array = new_capsule(a, "arrow_array", [](PyObject* c) { release_capsule<ArrowArray>(c, "arrow_array"); });
  return py::make_tuple(schema_capsule(t), array);
}

py::object stream_capsule(const Table& t) {
  auto* s = new ArrowArrayStream{};
  export_arrow_stream({t}, s);
  return new_capsule(s, "arrow_array_stream",
                     [](PyObject* c) { release_capsule<ArrowArrayStream>(c, "arrow_array_stream"); });
}

// groupby of table.hpp's column tuples; the result stays a tandem::Table (_Table).
py::tuple groupby_to_table(const py::sequence& columns, const std::vector<std::string>& by, const py::list& aggs,
                           std::string_view device, int threads) {
  const Table input = table_from_python(columns);
  GroupBySpec spec{.by = by};
  for (py::handle item : aggs) {
    const auto t = py::reinterpret_borrow<py::tuple>(item);
    spec.aggs.push_back(Aggregation{.op = t[0].cast<AggOp>(),
                                    .column = t[1].cast<std::string>(),
                                    .q = t[2].cast<double>(),
                                    .n = t[3].cast<std::size_t>(),
                                    .name = t[4].cast<std::string>()});
  }
  GroupByOptions o;
  o.device = device_arg(device);
  o.threads = threads;
  GroupByResult r = without_gil([&] { return groupby(input, spec, o); });
  return py::make_tuple(PyTable{std::move(r.table)}, std::move(r.report));
}

}  // namespace

Column column_of_table(const py::handle& table, const std::string& name) {
  return table.cast<const PyTable&>().table.column(name);
}

Column column_of_stream(const py::handle& capsule, const std::string& name) {
  Table t = table_of_stream(capsule, import_options(py::none(), false, name));
  if (t.num_columns() != 1)
    throw py::value_error(
        fmt::format("column '{}': an Arrow stream of {} columns, expected one", name, t.num_columns()));
  Column c = t.column(0);
  c.name = name;
  return c;
}

void bind_arrow(py::module_& m) {
  py::class_<PyTable>(m, "_Table", "tandem::Table, in and out through the Arrow PyCapsule protocol.")
      .def_static(
          "from_stream",
          [](const py::handle& capsule, const py::object& columns, bool codes) {
            return PyTable{table_of_stream(capsule, import_options(columns, codes))};
          },
          py::arg("capsule"), py::arg("columns") = py::none(), py::arg("codes") = false)
      .def_static(
          "from_array",
          [](const py::handle& schema, const py::handle& array, const py::object& columns, bool codes) {
            return PyTable{table_of_array(schema, array, import_options(columns, codes))};
          },
          py::arg("schema"), py::arg("array"), py::arg("columns") = py::none(), py::arg("codes") = false)
      .def_static(
          "from_columns", [](const py::sequence& columns) { return PyTable{table_from_python(columns)}; },
          py::arg("columns"), "A table of table.hpp's column tuples (numbers lent, not copied).")
      .def_property_readonly("rows", [](const PyTable& t) { return t.table.rows(); })
      .def_property_readonly("names",
                             [](const PyTable& t) {
                               std::vector<std::string> names;
                               for (const auto& c : t.table.columns()) names.push_back(c.name);
                               return names;
                             })
      .def_property_readonly("types",
                             [](const PyTable& t) {
                               std::vector<std::string> types;
                               for (const auto& c : t.table.columns()) types.emplace_back(to_string(c.type));
                               return types;
                             })
      .def(
          "columns", [](const PyTable& t) { return table_to_python(t.table); },
          "(name, values, missing) per column; numbers are views of the table's buffers.")
      .def(
          "buffer_addresses",
          [](const PyTable& t) {
            py::dict out;
            for (const auto& c : t.table.columns())
              out[py::str(c.name)] = reinterpret_cast<std::uintptr_t>(c.values.data());
            return out;
          },
          "Each column's values address (to check that nothing was copied).")
      .def("schema_capsule", [](const PyTable& t) { return schema_capsule(t.table); })
      .def("array_capsules", [](const PyTable& t) { return array_capsules(t.table); })
      .def("stream_capsule", [](const PyTable& t) { return stream_capsule(t.table); });
  m.def("_groupby_to_table", &groupby_to_table, py::arg("columns"), py::arg("by"), py::arg("aggs"), py::arg("device"),
        py::arg("threads"), "tandem::groupby of column tuples: (_Table, Report).");
}

}  // namespace tandem::python
