// tandem._Table: a tandem::Table held by Python, read from and written to the Arrow PyCapsule
// protocol (capsules "arrow_array_stream", "arrow_schema", "arrow_array"). Its columns also cross
// into table_from_python (table.hpp) as ("column", name, _Table) without a copy, and an Arrow
// stream of one column as ("arrow", name, stream capsule).
#pragma once
#include "common.hpp"
#include "tandem/table.hpp"

namespace tandem::python {

struct PyTable {
  Table table;
};

// The named column of a _Table (shares its buffers).
Column column_of_table(const py::handle& table, const std::string& name);
// A one-column stream capsule (e.g. a pyarrow ChunkedArray's) as a column called `name`.
Column column_of_stream(const py::handle& capsule, const std::string& name);

void bind_arrow(py::module_& m);

}  // namespace tandem::python
