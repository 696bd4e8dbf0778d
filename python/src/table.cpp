#include "table.hpp"

#include "arrow.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tandem::python {
namespace {

std::optional<ColumnType> column_type_of_array(const py::array& a) {
  if (const auto t = key_dtype(a.dtype())) return column_type_of(*t);
  return std::nullopt;
}

// Validity bitmap from numpy's missing mask (True: missing); empty when nothing is missing.
std::vector<std::uint8_t> validity_from_mask(const py::handle& missing, std::size_t rows, const std::string& name) {
  if (missing.is_none()) return {};
  const auto mask = py::array::ensure(missing);
  if (!mask || mask.dtype().kind() != 'b' || mask.ndim() != 1 || !(mask.flags() & py::array::c_style))
    throw py::type_error(fmt::format("column '{}': the missing mask must be a 1-D contiguous bool array", name));
  if (static_cast<std::size_t>(mask.size()) != rows)
    throw py::value_error(fmt::format("column '{}': {} values but a missing mask of {}", name, rows, mask.size()));
  const auto* m = static_cast<const bool*>(mask.data());
  bool any = false;
  for (std::size_t i = 0; i < rows && !any; ++i) any = m[i];
  if (!any) return {};
  return make_validity(rows, [&](std::size_t i) { return !m[i]; });
}

Column numbers_column(const std::string& name, const py::handle& values, const py::handle& missing) {
  const auto a = py::array::ensure(values);
  if (!a) throw py::type_error(fmt::format("column '{}': expected a numpy array", name));
  const auto type = column_type_of_array(a);
  if (!type)
    throw py::type_error(
        fmt::format("column '{}': dtype {} is not supported (int32, int64, uint32, uint64, float32, float64)", name,
                    dtype_name(a.dtype())));
  const ArrayView v = key_array(a, fmt::format("column '{}'", name), false);
  Column c;
  c.name = name;
  c.type = *type;
  c.length = v.size;
  c.values = Buffer::borrow(v.data, v.size * value_width(*type), keep_alive(a));
  if (auto bits = validity_from_mask(missing, v.size, name); !bits.empty()) c.validity = Buffer::take(std::move(bits));
  c.validate();
  return c;
}

// The UTF-8 bytes of a str (surrogate escapes give back the bytes they stand for) or a bytes
// object; nullopt for a missing value (None, NaN, pandas.NA).
std::optional<std::string_view> string_item(PyObject* o, const std::string& name, std::size_t row, py::object& hold) {
  if (PyUnicode_Check(o)) {
    Py_ssize_t len = 0;
    if (const char* p = PyUnicode_AsUTF8AndSize(o, &len)) return std::string_view(p, static_cast<std::size_t>(len));
    PyErr_Clear();
    hold = py::reinterpret_steal<py::object>(PyUnicode_AsEncodedString(o, "utf-8", "surrogateescape"));
    if (!hold) {
      PyErr_Clear();
      throw py::value_error(fmt::format("column '{}' row {}: the string cannot be encoded as UTF-8", name, row));
    }
    return std::string_view(PyBytes_AS_STRING(hold.ptr()), static_cast<std::size_t>(PyBytes_GET_SIZE(hold.ptr())));
  }
  if (PyBytes_Check(o)) return std::string_view(PyBytes_AS_STRING(o), static_cast<std::size_t>(PyBytes_GET_SIZE(o)));
  if (o == Py_None || (PyFloat_Check(o) && std::isnan(PyFloat_AS_DOUBLE(o))) ||
      std::string_view(Py_TYPE(o)->tp_name) == "NAType")
    return std::nullopt;
  throw py::type_error(fmt::format("column '{}' row {}: {} is not a string (text columns hold str, bytes or None)",
                                   name, row, Py_TYPE(o)->tp_name));
}

class StringsBuilder {
 public:
  explicit StringsBuilder(std::size_t rows) {
    offsets_.reserve(rows + 1), offsets_.push_back(0), present_.reserve(rows);
  }
  void add(std::optional<std::string_view> s) {
    if (s) bytes_.insert(bytes_.end(), s->begin(), s->end());
    offsets_.push_back(bytes_.size());
    present_.push_back(s.has_value());
    any_missing_ |= !s;
  }
  Column finish(const std::string& name) {
    std::vector<std::uint8_t> validity;
    if (any_missing_) validity = make_validity(present_.size(), [&](std::size_t i) { return present_[i] != 0; });
    return make_string_column(name, std::move(bytes_), std::move(offsets_), std::move(validity));
  }

 private:
  std::vector<char> bytes_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::uint8_t> present_;
  bool any_missing_{false};
};

Column strings_column(const std::string& name, const py::handle& items) {
  // An object array is read through its pointers; any other sequence through PySequence_Fast.
  if (auto a = py::array::ensure(items);
      a && a.dtype().kind() == 'O' && a.ndim() == 1 && (a.flags() & py::array::c_style)) {
    const auto n = static_cast<std::size_t>(a.size());
    auto* const* objs = static_cast<PyObject* const*>(a.data());
    StringsBuilder b(n);
    py::object hold;
    for (std::size_t i = 0; i < n; ++i) b.add(string_item(objs[i], name, i, hold));
    return b.finish(name);
  }
  py::object seq = py::reinterpret_steal<py::object>(PySequence_Fast(items.ptr(), "a text column must be a sequence"));
  if (!seq) throw py::error_already_set();
  const auto n = static_cast<std::size_t>(PySequence_Fast_GET_SIZE(seq.ptr()));
  PyObject** objs = PySequence_Fast_ITEMS(seq.ptr());
  StringsBuilder b(n);
  py::object hold;
  for (std::size_t i = 0; i < n; ++i) b.add(string_item(objs[i], name, i, hold));
  return b.finish(name);
}

template <class C>
Column expand_codes(const std::string& name, const std::vector<std::optional<std::string>>& cats, const C* codes,
                    std::size_t n) {
  StringsBuilder b(n);
  for (std::size_t i = 0; i < n; ++i) {
    const C code = codes[i];
    if (code < 0) {
      b.add(std::nullopt);
      continue;
    }
    if (static_cast<std::size_t>(code) >= cats.size())
      throw py::value_error(
          fmt::format("column '{}' row {}: category code {} of {} categories", name, i, code, cats.size()));
    const auto& s = cats[static_cast<std::size_t>(code)];
    b.add(s ? std::optional<std::string_view>(*s) : std::nullopt);
  }
  return b.finish(name);
}

Column categories_column(const std::string& name, const py::handle& categories, const py::handle& codes_obj) {
  std::vector<std::optional<std::string>> cats;
  py::object hold;
  std::size_t row = 0;
  for (py::handle c : py::reinterpret_borrow<py::sequence>(categories)) {
    const auto s = string_item(c.ptr(), name, row++, hold);
    cats.push_back(s ? std::optional<std::string>(std::string(*s)) : std::nullopt);
  }
  const auto codes = py::array::ensure(codes_obj);
  if (!codes || codes.dtype().kind() != 'i' || codes.ndim() != 1 || !(codes.flags() & py::array::c_style))
    throw py::type_error(fmt::format("column '{}': category codes must be a 1-D contiguous integer array", name));
  const auto n = static_cast<std::size_t>(codes.size());
  switch (codes.itemsize()) {
    case 1: return expand_codes(name, cats, static_cast<const std::int8_t*>(codes.data()), n);
    case 2: return expand_codes(name, cats, static_cast<const std::int16_t*>(codes.data()), n);
    case 4: return expand_codes(name, cats, static_cast<const std::int32_t*>(codes.data()), n);
    default: return expand_codes(name, cats, static_cast<const std::int64_t*>(codes.data()), n);
  }
}

Column column_from_python(const py::handle& spec_obj) {
  const auto spec = py::reinterpret_borrow<py::tuple>(spec_obj);
  const auto kind = spec[0].cast<std::string>();
  const auto name = spec[1].cast<std::string>();
  if (kind == "numbers") return numbers_column(name, spec[2], spec[3]);
  if (kind == "strings") return strings_column(name, spec[2]);
  if (kind == "categories") return categories_column(name, spec[2], spec[3]);
  if (kind == "column") return column_of_table(spec[2], name);  // a _Table's (arrow.hpp)
  if (kind == "arrow") return column_of_stream(spec[2], name);  // a one-column Arrow stream
  throw py::value_error(fmt::format("column '{}': unknown column kind '{}'", name, kind));
}

py::object missing_mask(const Column& c) {
  if (c.validity.empty() || c.missing_count() == 0) return py::none();
  py::array_t<bool> mask(static_cast<py::ssize_t>(c.length));
  bool* m = mask.mutable_data();
  for (std::size_t i = 0; i < c.length; ++i) m[i] = !c.present(i);
  return mask;
}

py::array strings_to_python(const Column& c) {
  py::array out(py::dtype("O"), {static_cast<py::ssize_t>(c.length)}, {});
  auto** objs = static_cast<PyObject**>(out.mutable_data());
  for (std::size_t i = 0; i < c.length; ++i) {
    PyObject* o = Py_None;
    Py_INCREF(o);
    if (c.present(i)) {
      const auto s = c.string(i);
      Py_DECREF(o);
      o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
      if (!o) throw py::error_already_set();
    }
    Py_XDECREF(objs[i]);  // a new object array holds NULL (or None)
    objs[i] = o;
  }
  return out;
}

py::array numbers_to_python(const Column& c) {
  auto owner = std::make_shared<Buffer>(c.values);
  return visit_numeric(c.type, [&](auto t) -> py::array {
    using T = decltype(t);
    return array_over(c.numbers<T>().data(), c.length, owner);
  });
}

}  // namespace

Table table_from_python(const py::sequence& columns) {
  std::vector<Column> cols;
  for (py::handle spec : columns) {
    cols.push_back(column_from_python(spec));
    if (cols.back().length != cols.front().length)
      throw py::value_error(fmt::format("column '{}' has {} rows but column '{}' has {}", cols.back().name,
                                        cols.back().length, cols.front().name, cols.front().length));
  }
  return Table(std::move(cols));
}

py::list table_to_python(const Table& t) {
  py::list out;
  for (const auto& c : t.columns()) {
    py::object values = c.type == ColumnType::str ? py::object(strings_to_python(c)) : py::object(numbers_to_python(c));
    out.append(py::make_tuple(c.name, values, missing_mask(c)));
  }
  return out;
}

void bind_table(py::module_& m) {
  m.def(
      "_table_roundtrip",
      [](const py::sequence& columns) {
        // Number columns come back as views of the input arrays: read-only, as they may be.
        py::list out = table_to_python(table_from_python(columns));
        for (py::handle c : out) {
          py::object values = py::reinterpret_borrow<py::tuple>(c)[1];
          if (py::array::ensure(values).dtype().kind() != 'O') values.attr("flags").attr("writeable") = false;
        }
        return out;
      },
      py::arg("columns"),
      "Columns through tandem::Table and back: what groupby's input conversion makes of them (for checks).");
}

}  // namespace tandem::python
