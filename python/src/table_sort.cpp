// tandem::argsort of tables for tandem.sort_values: the key columns cross (table.hpp's tuples),
// the row order comes back, and the rows are taken column by column (_take: numpy columns on every
// core; pandas takes the others, and the index).
// tandem::sort_csv for tandem.sort_csv: file to file, nothing crosses but the paths.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common.hpp"
#include "table.hpp"
#include "tandem/core/gather.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
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

struct Bytes16 {
  std::uint64_t lo, hi;
};

// Whether every row lies in [0, n); marks taken[i] for each row i when taken is not null.
bool rows_in_range(const std::int64_t* rows, std::int64_t k, std::int64_t n, std::uint8_t* taken, int threads) {
  std::int64_t bad = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : bad) if (k > (1 << 15))
  for (std::int64_t j = 0; j < k; ++j) {
    const std::int64_t i = rows[j];
    if (static_cast<std::uint64_t>(i) >= static_cast<std::uint64_t>(n)) ++bad;
    else if (taken) std::atomic_ref<std::uint8_t>(taken[i]).store(1, std::memory_order_relaxed);
  }
  return bad == 0;
}

// Elements rows[j] of a contiguous 1-D array: numbers copied by width, Python objects as pointers.
// An object gains one reference per time it is taken: when rows is a permutation that is once
// each, counted in the source's order (objects read where they lie, not at random); otherwise in
// the rows' order.
py::array take_rows(const py::array& a, const py::array_t<std::int64_t, py::array::c_style>& rows, int threads) {
  if (a.ndim() != 1 || !(a.flags() & py::array::c_style))
    throw py::value_error("_take: expected a contiguous one-dimensional array");
  const auto n = static_cast<std::int64_t>(a.shape(0)), k = static_cast<std::int64_t>(rows.shape(0));
  const std::size_t width = a.itemsize();
  const bool objects = a.dtype().kind() == 'O';
  if (!objects && width != 1 && width != 2 && width != 4 && width != 8 && width != 16)
    throw py::value_error("_take: elements of " + std::to_string(width) + " bytes");
  if (threads <= 0) threads = default_threads();
  // Object arrays start as null pointers: every one is written below.
  py::array out(a.dtype(), std::vector<py::ssize_t>{k});
  std::vector<std::uint8_t> taken(objects && k == n ? n : 0);
  if (!rows_in_range(rows.data(), k, n, taken.empty() ? nullptr : taken.data(), threads))
    throw py::index_error("_take: a row index lies outside the array");
  const auto run = [&](auto t) {
    using T = decltype(t);
    gather_prefetched(static_cast<const T*>(a.data()), rows.data(), static_cast<std::size_t>(k),
                      static_cast<T*>(out.mutable_data()), threads);
  };
  const auto by_width = [&] {  // pointers and bytes only: no reference is touched here
    switch (width) {
      case 1: return run(std::uint8_t{});
      case 2: return run(std::uint16_t{});
      case 4: return run(std::uint32_t{});
      case 8: return run(std::uint64_t{});
      default: return run(Bytes16{});
    }
  };
  if (!objects) {
    without_gil(by_width);
    return out;
  }
  // Object pointers are copied with the GIL held: without it another thread could replace an
  // element and free its object before the reference below is added.
  by_width();
  auto* const* from = static_cast<PyObject* const*>(a.data());
  auto** to = static_cast<PyObject**>(out.mutable_data());
  std::int64_t once = 0;
  for (const auto t : taken) once += t;
  PyObject* const* counted = once == n && k == n ? from : to;
  for (std::int64_t j = 0; j < k; ++j) {
    if (j + 8 < k && counted[j + 8]) __builtin_prefetch(counted[j + 8], 1);
    Py_XINCREF(counted[j]);
  }
  for (std::int64_t j = 0; j < k; ++j)  // a null element (numpy reads it as None) stays None
    if (to[j] == nullptr) to[j] = Py_NewRef(Py_None);
  return out;
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
  m.def("_take", &take_rows, py::arg("array"), py::arg("rows"), py::arg("threads"),
        "array[rows] of a contiguous one-dimensional numpy array (numbers or Python objects), on every core.");
  m.def("_sort_csv", &sort_csv_file, py::arg("in_path"), py::arg("out_path"), py::arg("keys"), py::arg("nulls_first"),
        py::arg("limit"), py::arg("memory_limit"), py::arg("temp_dir"), py::arg("schema"), py::arg("delimiter"),
        py::arg("threads"),
        "tandem::sort_csv of one file into another by (name, descending) keys: (rows written, rows read, runs, "
        "Report).");
}

}  // namespace tandem::python
