// Tables of named columns: what group-by, the CSV reader, the distributed layer and the Python
// package exchange. Numbers are stored as plain arrays, strings as offsets + bytes, and each
// column may carry a validity bitmap (Arrow's layout), so a numpy array or an Arrow buffer can
// be lent to a column without a copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tandem/core/types.hpp"

namespace tandem {

// Element types of table columns: fixed-width numbers and strings.
enum class ColumnType : std::uint8_t { i32, i64, u32, u64, f32, f64, str };

std::string_view to_string(ColumnType t);
ColumnType parse_column_type(std::string_view name);  // "i32" … "f64", "str"; UsageError otherwise
std::size_t value_width(ColumnType t);                // bytes per element; 0 for str
bool is_integer(ColumnType t);
bool is_floating(ColumnType t);
std::optional<ColumnType> column_type_of(DType t);  // nullopt for u8, i16, …
DType to_dtype(ColumnType t);                       // UsageError for str

template <class T>
constexpr ColumnType column_type_v = [] {
  if constexpr (std::is_same_v<T, std::int32_t>) return ColumnType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return ColumnType::i64;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return ColumnType::u32;
  else if constexpr (std::is_same_v<T, std::uint64_t>) return ColumnType::u64;
  else if constexpr (std::is_same_v<T, float>) return ColumnType::f32;
  else if constexpr (std::is_same_v<T, double>) return ColumnType::f64;
  else static_assert(sizeof(T) == 0, "not a column element type");
}();

// Calls f(T{}) with the C++ type of a numeric column type (UsageError for str).
template <class F>
decltype(auto) visit_numeric(ColumnType t, F&& f) {
  switch (t) {
    case ColumnType::i32: return f(std::int32_t{});
    case ColumnType::i64: return f(std::int64_t{});
    case ColumnType::u32: return f(std::uint32_t{});
    case ColumnType::u64: return f(std::uint64_t{});
    case ColumnType::f32: return f(float{});
    case ColumnType::f64: return f(double{});
    case ColumnType::str: break;
  }
  (void)to_dtype(t);  // throws UsageError: strings are not numbers
  return f(double{});
}

// A read-only run of bytes and whatever keeps it alive: a vector the buffer took, or memory a
// caller lends (with an optional keep-alive handle, e.g. a reference to a numpy array).
class Buffer {
 public:
  Buffer() = default;
  template <class T, class Alloc>
  static Buffer take(std::vector<T, Alloc> v) {
    auto owned = std::make_shared<std::vector<T, Alloc>>(std::move(v));
    Buffer b;
    b.data_ = reinterpret_cast<const std::byte*>(owned->data());
    b.size_ = owned->size() * sizeof(T);
    b.owner_ = std::move(owned);
    return b;
  }
  static Buffer borrow(const void* data, std::size_t bytes, std::shared_ptr<const void> keep_alive = {});

  const std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  template <class T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(data_), size_ / sizeof(T)};
  }

 private:
  std::shared_ptr<const void> owner_;
  const std::byte* data_{nullptr};
  std::size_t size_{0};
};

// One named column. Numbers: `values` holds `length` elements of `type`. Strings: `offsets`
// holds length + 1 u64 offsets into the bytes in `values` (offsets[0] == 0, non-decreasing).
// `validity` empty: every row present; otherwise bit (i % 8) of byte i / 8 is 1 when row i is
// present (least significant bit first, as Arrow). A missing row's value is unspecified.
struct Column {
  std::string name;
  ColumnType type{ColumnType::i64};
  std::size_t length{0};
  Buffer values;
  Buffer offsets;
  Buffer validity;

  bool present(std::size_t i) const {
    return validity.empty() || ((static_cast<unsigned>(validity.data()[i >> 3]) >> (i & 7)) & 1u);
  }
  std::size_t missing_count() const;
  template <class T>
  std::span<const T> numbers() const {
    check_type(column_type_v<T>);
    return values.as<T>().first(length);
  }
  std::span<const std::uint64_t> string_offsets() const {
    check_type(ColumnType::str);
    return offsets.as<std::uint64_t>().first(length + 1);
  }
  std::string_view string(std::size_t i) const {
    const auto* o = offsets.as<std::uint64_t>().data();
    return {reinterpret_cast<const char*>(values.data()) + o[i], static_cast<std::size_t>(o[i + 1] - o[i])};
  }
  // Checks the buffers' sizes against length and type (and string offsets' order); throws
  // InputError naming the column.
  void validate() const;
  void check_type(ColumnType expected) const;  // UsageError naming the column and both types
};

// Builds a column value by value (the CSV reader, group-by results).
class ColumnBuilder {
 public:
  ColumnBuilder(std::string name, ColumnType type, std::size_t reserve = 0);
  template <class T>
  void push(T v) {
    if (column_type_v<T> != type_) wrong_type(column_type_v<T>);
    append_bytes(&v, sizeof v);
    set_present(true);
  }
  void push_string(std::string_view s);
  void push_missing();
  std::size_t size() const { return length_; }
  ColumnType type() const { return type_; }
  Column finish();

 private:
  void append_bytes(const void* p, std::size_t n);
  [[noreturn]] void wrong_type(ColumnType pushed) const;
  void set_present(bool present);
  std::string name_;
  ColumnType type_;
  std::size_t length_{0};
  std::vector<std::byte> values_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::uint8_t> validity_;
  bool any_missing_{false};
};

// Whole columns from vectors (validity as in Column; empty for none missing).
template <class T>
Column make_column(std::string name, std::vector<T> values, std::vector<std::uint8_t> validity = {}) {
  Column c;
  c.name = std::move(name);
  c.type = column_type_v<T>;
  c.length = values.size();
  c.values = Buffer::take(std::move(values));
  if (!validity.empty()) c.validity = Buffer::take(std::move(validity));
  c.validate();
  return c;
}
Column make_string_column(std::string name, const std::vector<std::string>& values,
                          std::vector<std::uint8_t> validity = {});
Column make_string_column(std::string name, std::vector<char> bytes, std::vector<std::uint64_t> offsets,
                          std::vector<std::uint8_t> validity = {});

// A validity bitmap of n rows with present(i) from the callable.
template <class F>
std::vector<std::uint8_t> make_validity(std::size_t n, F&& present) {
  std::vector<std::uint8_t> bits((n + 7) / 8, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (present(i)) bits[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
  return bits;
}

// The rows of `c` at the given indices, in that order (each index < c.length).
Column gather(const Column& c, std::span<const std::size_t> rows);

namespace detail {
struct MadeHere;  // the library's own mark (defined inside it only)
}

// Named columns of one length. Column names are unique.
class Table {
 public:
  Table() = default;
  explicit Table(std::vector<Column> columns);  // validates each; UsageError on a clash
  // The library's own tables, whose string columns it wrote or copied from checked ones: the
  // buffers' sizes are checked, every string offset's order is not checked again.
  Table(std::vector<Column> columns, const detail::MadeHere&);

  std::size_t rows() const { return columns_.empty() ? 0 : columns_.front().length; }
  std::size_t num_columns() const { return columns_.size(); }
  const std::vector<Column>& columns() const { return columns_; }
  const Column& column(std::size_t i) const { return columns_.at(i); }
  // UsageError "no column 'x' (columns: a, b, c)" when absent.
  const Column& column(std::string_view name) const;
  const Column* find(std::string_view name) const;
  // Appends a column; UsageError when its name is taken or its length differs from rows().
  void add(Column c);
  void add(Column c, const detail::MadeHere&);  // as the constructor above
  // Every column's rows at the given indices, in that order.
  Table gather(std::span<const std::size_t> rows) const;

 private:
  // Names looked up by hashing, so that adding N columns costs O(N), not O(N^2).
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  void add_checked(Column c);
  std::vector<Column> columns_;
  std::unordered_map<std::string, std::size_t, NameHash, std::equal_to<>> index_;  // name -> column
};

}  // namespace tandem
