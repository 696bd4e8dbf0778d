#include "tandem/table.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "table/csv_scan.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/gather.hpp"

namespace tandem {
namespace {
struct TypeInfo {
  std::string_view name;
  ColumnType type;
  std::size_t width;
};
constexpr std::array<TypeInfo, 7> kTypes{{{"i32", ColumnType::i32, 4},
                                          {"i64", ColumnType::i64, 8},
                                          {"u32", ColumnType::u32, 4},
                                          {"u64", ColumnType::u64, 8},
                                          {"f32", ColumnType::f32, 4},
                                          {"f64", ColumnType::f64, 8},
                                          {"str", ColumnType::str, 0}}};

const TypeInfo& info(ColumnType t) {
  for (const auto& i : kTypes)
    if (i.type == t) return i;
  throw Error("unknown column type");
}
}  // namespace

std::string_view to_string(ColumnType t) { return info(t).name; }
std::size_t value_width(ColumnType t) { return info(t).width; }
bool is_integer(ColumnType t) {
  return t == ColumnType::i32 || t == ColumnType::i64 || t == ColumnType::u32 || t == ColumnType::u64;
}
bool is_floating(ColumnType t) { return t == ColumnType::f32 || t == ColumnType::f64; }

ColumnType parse_column_type(std::string_view name) {
  for (const auto& i : kTypes)
    if (i.name == name) return i.type;
  throw UsageError(fmt::format("unknown column type '{}' (expected i32, i64, u32, u64, f32, f64 or str)", name));
}

std::optional<ColumnType> column_type_of(DType t) {
  switch (t) {
    case DType::i32: return ColumnType::i32;
    case DType::i64: return ColumnType::i64;
    case DType::u32: return ColumnType::u32;
    case DType::u64: return ColumnType::u64;
    case DType::f32: return ColumnType::f32;
    case DType::f64: return ColumnType::f64;
    default: return std::nullopt;
  }
}

DType to_dtype(ColumnType t) {
  switch (t) {
    case ColumnType::i32: return DType::i32;
    case ColumnType::i64: return DType::i64;
    case ColumnType::u32: return DType::u32;
    case ColumnType::u64: return DType::u64;
    case ColumnType::f32: return DType::f32;
    case ColumnType::f64: return DType::f64;
    case ColumnType::str: break;
  }
  throw UsageError("a string column has no numeric element type");
}

Buffer Buffer::borrow(const void* data, std::size_t bytes, std::shared_ptr<const void> keep_alive) {
  Buffer b;
  b.data_ = static_cast<const std::byte*>(data);
  b.size_ = bytes;
  b.owner_ = std::move(keep_alive);
  return b;
}

std::size_t Column::missing_count() const {
  if (validity.empty()) return 0;
  std::size_t present_rows = 0;
  const std::size_t full = length / 8;
  const auto* bits = reinterpret_cast<const std::uint8_t*>(validity.data());
  for (std::size_t i = 0; i < full; ++i) present_rows += std::popcount(bits[i]);
  for (std::size_t i = full * 8; i < length; ++i) present_rows += present(i);
  return length - present_rows;
}

void Column::check_type(ColumnType expected) const {
  if (type != expected)
    throw UsageError(fmt::format("column '{}' is {}, not {}", name, to_string(type), to_string(expected)));
}

namespace {

// Everything Column::validate checks but the order of each string offset: O(1).
void check_sizes(const Column& c) {
  if (!c.validity.empty() && c.validity.size() < (c.length + 7) / 8)
    throw InputError(
        fmt::format("column '{}': validity bitmap of {} bytes for {} rows", c.name, c.validity.size(), c.length));
  if (c.type != ColumnType::str) {
    if (c.values.size() < c.length * value_width(c.type))
      throw InputError(fmt::format("column '{}': {} bytes hold fewer than {} {} values", c.name, c.values.size(),
                                   c.length, to_string(c.type)));
    return;
  }
  if (c.offsets.size() < (c.length + 1) * sizeof(std::uint64_t))
    throw InputError(fmt::format("column '{}': {} string offsets for {} rows", c.name,
                                 c.offsets.size() / sizeof(std::uint64_t), c.length));
  const auto o = c.offsets.as<std::uint64_t>();
  if (o[0] != 0) throw InputError(fmt::format("column '{}': the first string offset is {}, not 0", c.name, o[0]));
  if (o[c.length] > c.values.size())
    throw InputError(
        fmt::format("column '{}': string offsets reach byte {} of {}", c.name, o[c.length], c.values.size()));
}

}  // namespace

void Column::validate() const {
  check_sizes(*this);
  if (type != ColumnType::str) return;
  // Every row checked, on every core for long columns (a serial pass cost as much as grouping
  // them). Not for a scan's chunk (some 10^5 rows, its table built on a scan's worker thread):
  // there a team of threads started per worker costs more than the check, and spins after it.
  const auto o = offsets.as<std::uint64_t>();
  const auto rows = static_cast<std::int64_t>(length);
  std::int64_t first_bad = rows;
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (rows > (std::int64_t{1} << 21))
  for (std::int64_t i = 0; i < rows; ++i)
    if (o[i + 1] < o[i]) first_bad = std::min(first_bad, i);
  if (first_bad < rows)
    throw InputError(fmt::format("column '{}': string offsets decrease at row {}", name, first_bad));
}

ColumnBuilder::ColumnBuilder(std::string name, ColumnType type, std::size_t reserve)
    : name_(std::move(name)), type_(type) {
  if (type_ == ColumnType::str) {
    offsets_.reserve(reserve + 1);
    offsets_.push_back(0);
  } else {
    values_.reserve(reserve * value_width(type_));
  }
}

void ColumnBuilder::append_bytes(const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  values_.insert(values_.end(), b, b + n);
}

void ColumnBuilder::set_present(bool present) {
  if (!present && !any_missing_) {
    any_missing_ = true;
    validity_.assign((length_ + 8) / 8, 0);
    for (std::size_t i = 0; i < length_; ++i) validity_[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
  }
  if (any_missing_) {
    if (validity_.size() * 8 <= length_) validity_.push_back(0);
    if (present) validity_[length_ >> 3] |= static_cast<std::uint8_t>(1u << (length_ & 7));
  }
  ++length_;
}

void ColumnBuilder::wrong_type(ColumnType pushed) const {
  throw UsageError(fmt::format("column '{}' is {}, not {}", name_, to_string(type_), to_string(pushed)));
}

void ColumnBuilder::push_string(std::string_view s) {
  if (type_ != ColumnType::str) wrong_type(ColumnType::str);
  append_bytes(s.data(), s.size());
  offsets_.push_back(values_.size());
  set_present(true);
}

void ColumnBuilder::push_missing() {
  if (type_ == ColumnType::str) {
    offsets_.push_back(values_.size());
  } else {
    values_.resize(values_.size() + value_width(type_));
  }
  set_present(false);
}

Column ColumnBuilder::finish() {
  Column c;
  c.name = std::move(name_);
  c.type = type_;
  c.length = length_;
  c.values = Buffer::take(std::move(values_));
  if (type_ == ColumnType::str) c.offsets = Buffer::take(std::move(offsets_));
  if (any_missing_) c.validity = Buffer::take(std::move(validity_));
  c.validate();
  return c;
}

Column make_string_column(std::string name, const std::vector<std::string>& values,
                          std::vector<std::uint8_t> validity) {
  std::vector<std::uint64_t> offsets(values.size() + 1, 0);
  for (std::size_t i = 0; i < values.size(); ++i) offsets[i + 1] = offsets[i] + values[i].size();
  std::vector<char> bytes(offsets.back());
  for (std::size_t i = 0; i < values.size(); ++i)
    if (!values[i].empty()) std::memcpy(bytes.data() + offsets[i], values[i].data(), values[i].size());
  return make_string_column(std::move(name), std::move(bytes), std::move(offsets), std::move(validity));
}

Column make_string_column(std::string name, std::vector<char> bytes, std::vector<std::uint64_t> offsets,
                          std::vector<std::uint8_t> validity) {
  Column c;
  c.name = std::move(name);
  c.type = ColumnType::str;
  c.length = offsets.empty() ? 0 : offsets.size() - 1;
  if (offsets.empty()) offsets.push_back(0);
  c.values = Buffer::take(std::move(bytes));
  c.offsets = Buffer::take(std::move(offsets));
  if (!validity.empty()) c.validity = Buffer::take(std::move(validity));
  c.validate();
  return c;
}

Column gather(const Column& c, std::span<const std::size_t> rows) {
  std::vector<std::uint8_t> validity;
  if (!c.validity.empty()) validity = make_validity(rows.size(), [&](std::size_t i) { return c.present(rows[i]); });
  if (c.type == ColumnType::str) {
    std::vector<std::uint64_t> offsets(rows.size() + 1, 0);
    for (std::size_t i = 0; i < rows.size(); ++i) offsets[i + 1] = offsets[i] + c.string(rows[i]).size();
    std::vector<char> bytes(offsets.back());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto s = c.string(rows[i]);
      if (!s.empty()) std::memcpy(bytes.data() + offsets[i], s.data(), s.size());
    }
    return make_string_column(c.name, std::move(bytes), std::move(offsets), std::move(validity));
  }
  return visit_numeric(c.type, [&](auto t) {
    using T = decltype(t);
    const auto v = c.numbers<T>();
    std::vector<T> out(rows.size());
    gather_prefetched(v.data(), rows.data(), rows.size(), out.data(), 1);  // random rows: loads asked ahead
    return make_column(c.name, std::move(out), std::move(validity));
  });
}

Table Table::gather(std::span<const std::size_t> rows) const {
  Table t;
  for (const auto& c : columns_) t.add(tandem::gather(c, rows));
  return t;
}

Table::Table(std::vector<Column> columns) {
  columns_.reserve(columns.size());
  index_.reserve(columns.size());
  for (auto& c : columns) add(std::move(c));
}

Table::Table(std::vector<Column> columns, const detail::MadeHere& mark) {
  columns_.reserve(columns.size());
  index_.reserve(columns.size());
  for (auto& c : columns) add(std::move(c), mark);
}

const Column* Table::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &columns_[it->second];
}

const Column& Table::column(std::string_view name) const {
  if (const auto* c = find(name)) return *c;
  const std::string names =
      csv::listed_names(columns_.size(), [&](std::size_t i) -> std::string_view { return columns_[i].name; });
  throw UsageError(fmt::format("no column '{}' (columns: {})", csv::shown_name(name), names));
}

void Table::add(Column c) {
  c.validate();
  add_checked(std::move(c));
}

void Table::add(Column c, const detail::MadeHere&) {
  check_sizes(c);
  add_checked(std::move(c));
}

void Table::add_checked(Column c) {
  if (find(c.name)) throw UsageError(fmt::format("two columns are named '{}'", c.name));
  if (!columns_.empty() && c.length != rows())
    throw UsageError(fmt::format("column '{}' has {} rows, the table {}", c.name, c.length, rows()));
  // Room first (geometric, so N adds move columns O(N) times in all): no throw after the name is
  // indexed.
  if (columns_.size() == columns_.capacity()) columns_.reserve(std::max<std::size_t>(8, 2 * columns_.capacity()));
  index_.emplace(c.name, columns_.size());
  columns_.push_back(std::move(c));
}

}  // namespace tandem
