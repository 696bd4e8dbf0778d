// tandem::Table from the Arrow C Data / C Stream interfaces (include/tandem/table/arrow.hpp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "core/scratch.hpp"
#include "table/csv_scan.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/table/arrow.hpp"

namespace tandem {
namespace {

// Owns a moved ArrowArray: its release callback runs once, when the last column lending from it
// goes.
struct ArrayOwner {
  ArrowArray array{};
  ArrayOwner() = default;
  ArrayOwner(const ArrayOwner&) = delete;
  ArrayOwner& operator=(const ArrayOwner&) = delete;
  ~ArrayOwner() {
    if (array.release) array.release(&array);
  }
};
using Owner = std::shared_ptr<const void>;

std::shared_ptr<ArrayOwner> take_array(ArrowArray* a) {
  auto owner = std::make_shared<ArrayOwner>();
  owner->array = *a;
  a->release = nullptr;  // moved: the producer's struct no longer owns anything
  return owner;
}

// What an Arrow format string is to tandem.
enum class Kind { number, widened, boolean, half, utf8, large_utf8, view, unsupported };
struct Format {
  Kind kind{Kind::unsupported};
  ColumnType type{ColumnType::i64};
  std::size_t width{0};  // bytes per source element (number, widened, half)
  bool is_signed{true};
};

Format number_format(char c) {
  switch (c) {
    case 'c': return {Kind::widened, ColumnType::i32, 1, true};
    case 'C': return {Kind::widened, ColumnType::i32, 1, false};
    case 's': return {Kind::widened, ColumnType::i32, 2, true};
    case 'S': return {Kind::widened, ColumnType::i32, 2, false};
    case 'i': return {Kind::number, ColumnType::i32, 4};
    case 'I': return {Kind::number, ColumnType::u32, 4};
    case 'l': return {Kind::number, ColumnType::i64, 8};
    case 'L': return {Kind::number, ColumnType::u64, 8};
    case 'e': return {Kind::half, ColumnType::f32, 2};
    case 'f': return {Kind::number, ColumnType::f32, 4};
    case 'g': return {Kind::number, ColumnType::f64, 8};
    case 'b': return {Kind::boolean, ColumnType::i32, 0};
    default: return {};
  }
}

Format parse_format(std::string_view f) {
  if (f.size() == 1) {
    if (f == "u" || f == "z") return {Kind::utf8, ColumnType::str};
    if (f == "U" || f == "Z") return {Kind::large_utf8, ColumnType::str};
    return number_format(f[0]);
  }
  if (f == "vu" || f == "vz") return {Kind::view, ColumnType::str};
  // Dates, times, timestamps and durations: their integer counts.
  if (f == "tdD" || f == "tts" || f == "ttm") return {Kind::number, ColumnType::i32, 4};
  if (f == "tdm" || f == "ttu" || f == "ttn" || f.starts_with("ts") || f.starts_with("tD"))
    return {Kind::number, ColumnType::i64, 8};
  return {};
}

std::string_view describe_format(std::string_view f) {
  if (f.starts_with("+l") || f.starts_with("+L") || f.starts_with("+w") || f.starts_with("+v")) return "a list";
  if (f == "+s") return "a struct";
  if (f == "+m") return "a map";
  if (f.starts_with("+u")) return "a union";
  if (f.starts_with("+r")) return "run-end encoded";
  if (f.starts_with("d:")) return "a decimal";
  if (f.starts_with("w:")) return "fixed-size binary";
  if (f.starts_with("tiM") || f.starts_with("tiD") || f.starts_with("tin")) return "an interval";
  if (f == "n") return "the null type";
  return "not a type tandem reads";
}

[[noreturn]] void refuse(const std::string& name, std::string_view format) {
  throw UsageError(
      fmt::format("column '{}': Arrow type '{}' ({}) is not supported; tandem takes integers, floats, bools, dates and "
                  "times, utf8/large_utf8/string_view strings, binary, and dictionaries of these",
                  name, format, describe_format(format)));
}

std::string column_name(const ArrowSchema& s, const std::string& fallback) {
  if (s.name && *s.name) return s.name;
  return fallback.empty() ? "column" : fallback;
}

ColumnType column_type(const ArrowSchema& s, const std::string& name, const ArrowImportOptions& o) {
  const std::string_view f = s.format ? s.format : "";
  if (s.dictionary) {
    const Format index = parse_format(f);
    if (index.kind != Kind::number && index.kind != Kind::widened) refuse(name, f);
    if (o.dictionaries == ArrowImportOptions::Dictionaries::codes)
      return index.type == ColumnType::u64   ? ColumnType::i64
             : index.type == ColumnType::u32 ? ColumnType::i64
                                             : index.type;
    return column_type(*s.dictionary, name, o);
  }
  const Format fm = parse_format(f);
  if (fm.kind == Kind::unsupported) refuse(name, f);
  return fm.type;
}

// ---- buffers -----------------------------------------------------------------------------------
const std::uint8_t* buffer(const ArrowArray& a, std::int64_t i, const std::string& name) {
  if (i >= a.n_buffers)
    throw InputError(fmt::format("column '{}': Arrow array has {} buffers, needs {}", name, a.n_buffers, i + 1));
  return static_cast<const std::uint8_t*>(a.buffers[i]);
}

bool bit(const std::uint8_t* bits, std::size_t i) { return (bits[i >> 3] >> (i & 7)) & 1u; }

Buffer import_validity(const ArrowArray& a, std::size_t offset, std::size_t length, const Owner& owner) {
  if (a.null_count == 0 || a.n_buffers == 0 || a.buffers[0] == nullptr || length == 0) return {};
  const auto* bits = static_cast<const std::uint8_t*>(a.buffers[0]);
  if (offset % 8 == 0) return Buffer::borrow(bits + offset / 8, (length + 7) / 8, owner);
  return Buffer::take(make_validity(length, [&](std::size_t i) { return bit(bits, offset + i); }));
}

template <class To, class From>
Buffer widen(const std::uint8_t* data, std::size_t length) {
  std::vector<To> out(length);
  const auto* src = reinterpret_cast<const From*>(data);
  for (std::size_t i = 0; i < length; ++i) out[i] = static_cast<To>(src[i]);
  return Buffer::take(std::move(out));
}

float half_to_float(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31) v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  return (h & 0x8000) ? -v : v;
}

// The values of a fixed-width column: lent when they are of tandem's type and aligned.
Buffer number_values(const ArrowArray& a, const Format& f, std::size_t offset, std::size_t length, const Owner& owner,
                     const std::string& name) {
  const auto* data = buffer(a, 1, name);
  if (length == 0) return {};
  if (!data) throw InputError(fmt::format("column '{}': Arrow array without a data buffer", name));
  if (f.kind == Kind::boolean) {
    std::vector<std::int32_t> out(length);
    for (std::size_t i = 0; i < length; ++i) out[i] = bit(data, offset + i);
    return Buffer::take(std::move(out));
  }
  data += offset * f.width;
  if (f.kind == Kind::half) {
    std::vector<float> out(length);
    for (std::size_t i = 0; i < length; ++i) {
      std::uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      out[i] = half_to_float(h);
    }
    return Buffer::take(std::move(out));
  }
  if (f.kind == Kind::widened) {
    if (f.width == 1)
      return f.is_signed ? widen<std::int32_t, std::int8_t>(data, length)
                         : widen<std::int32_t, std::uint8_t>(data, length);
    return f.is_signed ? widen<std::int32_t, std::int16_t>(data, length)
                       : widen<std::int32_t, std::uint16_t>(data, length);
  }
  if (reinterpret_cast<std::uintptr_t>(data) % f.width == 0) return Buffer::borrow(data, length * f.width, owner);
  std::vector<std::byte> copy(length * f.width);  // misaligned: a copy the column may read as numbers
  std::memcpy(copy.data(), data, copy.size());
  return Buffer::take(std::move(copy));
}

// Offsets rebased to start at 0, as u64; lent where they already are (large_utf8 at offset 0).
template <class O>
void string_values(Column& c, const ArrowArray& a, std::size_t offset, const Owner& owner) {
  const auto* o = reinterpret_cast<const O*>(buffer(a, 1, c.name)) + offset;
  const auto* bytes = buffer(a, 2, c.name);
  const auto first = static_cast<std::uint64_t>(o[0]);
  const auto last = static_cast<std::uint64_t>(o[c.length]);
  if (o[0] < 0 || last < first) throw InputError(fmt::format("column '{}': Arrow string offsets out of order", c.name));
  c.values = Buffer::borrow(bytes ? bytes + first : nullptr, last - first, owner);
  if (sizeof(O) == 8 && first == 0 && reinterpret_cast<std::uintptr_t>(o) % 8 == 0) {
    c.offsets = Buffer::borrow(o, (c.length + 1) * 8, owner);
    return;
  }
  // Uninitialised and written by every core: a serial zeroed copy of 10^7 offsets took longer than
  // grouping them.
  Scratch<std::uint64_t> rebased(c.length + 1);
  const auto n = static_cast<std::int64_t>(c.length + 1);
#pragma omp parallel for schedule(static) if (n > (std::int64_t{1} << 16))
  for (std::int64_t i = 0; i < n; ++i) rebased[i] = static_cast<std::uint64_t>(o[i]) - first;
  c.offsets = Buffer::take(std::move(rebased));
}

// string_view / binary_view: 16-byte views (length, then the bytes inline up to 12, else a prefix,
// a buffer index and an offset), gathered into offsets + bytes.
void view_values(Column& c, const ArrowArray& a, std::size_t offset) {
  const auto* views = buffer(a, 1, c.name) + offset * 16;
  const std::int64_t data_buffers = a.n_buffers - 3;  // validity, views, ..., variadic sizes
  std::vector<std::uint64_t> offsets(c.length + 1, 0);
  std::vector<char> bytes;
  for (std::size_t i = 0; i < c.length; ++i) {
    const auto* v = views + 16 * i;
    std::int32_t len, index, at;
    std::memcpy(&len, v, 4);
    const char* src = reinterpret_cast<const char*>(v + 4);
    if (len > 12) {
      std::memcpy(&index, v + 8, 4), std::memcpy(&at, v + 12, 4);
      if (index < 0 || index >= data_buffers || at < 0)
        throw InputError(
            fmt::format("column '{}' row {}: string view names buffer {} of {}", c.name, i, index, data_buffers));
      src = reinterpret_cast<const char*>(buffer(a, 2 + index, c.name)) + at;
    }
    if (len < 0) throw InputError(fmt::format("column '{}' row {}: negative string length", c.name, i));
    bytes.insert(bytes.end(), src, src + len);
    offsets[i + 1] = bytes.size();
  }
  c.values = Buffer::take(std::move(bytes));
  c.offsets = Buffer::take(std::move(offsets));
}

Column import_plain(const ArrowArray& a, const ArrowSchema& s, std::string name, std::size_t offset, std::size_t length,
                    const Owner& owner) {
  const std::string_view f = s.format ? s.format : "";
  const Format fm = parse_format(f);
  Column c;
  c.name = std::move(name);
  c.type = fm.type;
  c.length = length;
  c.validity = import_validity(a, offset, length, owner);
  switch (fm.kind) {
    case Kind::utf8: string_values<std::int32_t>(c, a, offset, owner); break;
    case Kind::large_utf8: string_values<std::int64_t>(c, a, offset, owner); break;
    case Kind::view: view_values(c, a, offset); break;
    case Kind::unsupported: refuse(c.name, f);
    default: c.values = number_values(a, fm, offset, length, owner, c.name);
  }
  if (c.type == ColumnType::str && length == 0) c.offsets = Buffer::take(std::vector<std::uint64_t>{0});
  c.validate();
  return c;
}

// The codes of a dictionary column as row numbers of the dictionary (missing rows: 0).
Column decode_dictionary(const Column& codes, const ArrowArray& a, const ArrowSchema& s, const Owner& owner) {
  const ArrowArray& d = *a.dictionary;
  const auto dict_rows = static_cast<std::size_t>(d.length);
  const Column dict = import_plain(d, *s.dictionary, codes.name, static_cast<std::size_t>(d.offset), dict_rows, owner);
  std::vector<std::size_t> rows(codes.length, 0);
  bool any_missing = !codes.validity.empty();
  visit_numeric(codes.type, [&](auto t) {
    using T = decltype(t);
    const auto v = codes.numbers<T>();
    for (std::size_t i = 0; i < codes.length; ++i) {
      if (!codes.present(i)) continue;
      if (v[i] < 0 || static_cast<std::uint64_t>(v[i]) >= dict_rows)
        throw InputError(fmt::format("column '{}' row {}: dictionary code {} of {} values", codes.name, i,
                                     static_cast<std::int64_t>(v[i]), dict_rows));
      rows[i] = static_cast<std::size_t>(v[i]);
    }
  });
  if (dict_rows == 0) {  // every row is missing (checked above): nothing to gather from
    ColumnBuilder b(codes.name, dict.type, codes.length);
    for (std::size_t i = 0; i < codes.length; ++i) b.push_missing();
    return b.finish();
  }
  Column out = gather(dict, rows);
  if (!any_missing) return out;
  std::vector<std::uint8_t> bits =
      make_validity(codes.length, [&](std::size_t i) { return codes.present(i) && out.present(i); });
  out.validity = Buffer::take(std::move(bits));
  return out;
}

Column import_column(const ArrowArray& a, const ArrowSchema& s, std::string name, std::size_t parent_offset,
                     std::size_t length, const Owner& owner, const ArrowImportOptions& o) {
  (void)column_type(s, name, o);  // refuses what tandem does not take, before reading any buffer
  const std::size_t offset = static_cast<std::size_t>(a.offset) + parent_offset;
  if (static_cast<std::size_t>(a.length) < length + parent_offset)
    throw InputError(fmt::format("column '{}': Arrow array of {} rows for {}", name, a.length, length + parent_offset));
  if (!s.dictionary) return import_plain(a, s, std::move(name), offset, length, owner);
  if (!a.dictionary) throw InputError(fmt::format("column '{}': dictionary type without a dictionary", name));
  ArrowSchema index_schema = s;
  index_schema.dictionary = nullptr;
  Column codes = import_plain(a, index_schema, std::move(name), offset, length, owner);
  if (o.dictionaries == ArrowImportOptions::Dictionaries::decode) return decode_dictionary(codes, a, s, owner);
  if (codes.type == ColumnType::u32 || codes.type == ColumnType::u64) {  // codes are never negative
    std::vector<std::int64_t> wide(codes.length);
    visit_numeric(codes.type, [&](auto t) {
      const auto v = codes.numbers<decltype(t)>();
      for (std::size_t i = 0; i < codes.length; ++i) wide[i] = static_cast<std::int64_t>(v[i]);
    });
    codes.type = ColumnType::i64;
    codes.values = Buffer::take(std::move(wide));
  }
  return codes;
}

// The (child index, name) of each column to import.
std::vector<std::pair<std::size_t, std::string>> selected(const ArrowSchema& s, const ArrowImportOptions& o) {
  std::vector<std::pair<std::size_t, std::string>> out;
  std::vector<std::string> names;
  for (std::int64_t i = 0; i < s.n_children; ++i)
    names.push_back(column_name(*s.children[i], fmt::format("column{}", i)));
  if (o.columns.empty()) {
    for (std::size_t i = 0; i < names.size(); ++i) out.emplace_back(i, names[i]);
    return out;
  }
  for (const auto& want : o.columns) {
    const auto it = std::find(names.begin(), names.end(), want);
    if (it == names.end())
      throw UsageError(fmt::format("no column '{}' (columns: {})", csv::shown_name(want), csv::listed_names(names)));
    out.emplace_back(static_cast<std::size_t>(it - names.begin()), want);
  }
  return out;
}

bool is_record_batch(const ArrowSchema& s) { return s.format && std::string_view(s.format) == "+s"; }

}  // namespace

Table table_from_arrow(ArrowArray* array, const ArrowSchema& schema, const ArrowImportOptions& options) {
  if (!array || !array->release) throw UsageError("table_from_arrow: the Arrow array is released");
  const auto owner = take_array(array);
  const ArrowArray& a = owner->array;
  const auto rows = static_cast<std::size_t>(a.length);
  std::vector<Column> columns;
  if (!is_record_batch(schema)) {
    const auto name = column_name(schema, options.column_name);
    columns.push_back(import_column(a, schema, name, 0, rows, owner, options));
    return Table(std::move(columns));
  }
  if (a.n_children != schema.n_children)
    throw InputError(
        fmt::format("Arrow record batch of {} columns for a schema of {}", a.n_children, schema.n_children));
  if (a.null_count > 0 && a.n_buffers > 0 && a.buffers[0])
    throw UsageError("an Arrow record batch with missing rows at the top level is not supported");
  for (const auto& [i, name] : selected(schema, options))
    columns.push_back(import_column(*a.children[i], *schema.children[i], name, static_cast<std::size_t>(a.offset), rows,
                                    owner, options));
  return Table(std::move(columns));
}

// ---- streams -----------------------------------------------------------------------------------
namespace {
struct StreamGuard {
  ArrowArrayStream* s;
  ~StreamGuard() {
    if (s && s->release) s->release(s);
  }
};
struct SchemaGuard {
  ArrowSchema s{};
  ~SchemaGuard() {
    if (s.release) s.release(&s);
  }
};

[[noreturn]] void stream_failed(ArrowArrayStream* s, int code, std::string_view what) {
  const char* msg = s->get_last_error ? s->get_last_error(s) : nullptr;
  throw InputError(fmt::format("Arrow stream: {} failed ({}): {}", what, code, msg ? msg : "no message"));
}

Table empty_table(const ArrowSchema& s, const ArrowImportOptions& o) {
  std::vector<Column> columns;
  if (!is_record_batch(s)) {
    const auto name = column_name(s, o.column_name);
    columns.push_back(ColumnBuilder(name, column_type(s, name, o)).finish());
    return Table(std::move(columns));
  }
  for (const auto& [i, name] : selected(s, o))
    columns.push_back(ColumnBuilder(name, column_type(*s.children[i], name, o)).finish());
  return Table(std::move(columns));
}

void read_stream(ArrowArrayStream* stream, const ArrowImportOptions& o, const std::function<void(Table)>& f,
                 Table* empty) {
  if (!stream || !stream->release) throw UsageError("the Arrow stream is released");
  StreamGuard guard{stream};
  SchemaGuard schema;
  if (const int rc = stream->get_schema(stream, &schema.s)) stream_failed(stream, rc, "get_schema");
  if (empty) *empty = empty_table(schema.s, o);  // also refuses unsupported columns of an empty stream
  for (;;) {
    ArrowArray a{};
    if (const int rc = stream->get_next(stream, &a)) stream_failed(stream, rc, "get_next");
    if (!a.release) return;  // the end
    f(table_from_arrow(&a, schema.s, o));
  }
}

}  // namespace

void for_each_arrow_batch(ArrowArrayStream* stream, const std::function<void(Table)>& f,
                          const ArrowImportOptions& options) {
  read_stream(stream, options, f, nullptr);
}

Table table_from_arrow_stream(ArrowArrayStream* stream, const ArrowImportOptions& options) {
  Table empty;
  std::vector<Table> batches;
  read_stream(
      stream, options, [&](Table t) { batches.push_back(std::move(t)); }, &empty);
  if (batches.empty()) return empty;
  if (batches.size() == 1) return std::move(batches.front());
  return concatenate(batches);
}

Table concatenate(const std::vector<Table>& parts) {
  if (parts.empty()) return {};
  return concat_tables(parts, parts.front(), default_threads());
}

}  // namespace tandem
