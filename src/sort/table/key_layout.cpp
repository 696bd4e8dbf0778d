#include "key_layout.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::detail {
namespace {

// The prefix width of a string column and whether equal prefixes may hide different strings.
void plan_string_field(const Column& c, std::size_t max_prefix, KeyField& f) {
  const auto off = c.string_offsets();
  std::size_t longest = 0;
  for (std::size_t i = 0; i < c.length; ++i) longest = std::max<std::size_t>(longest, off[i + 1] - off[i]);
  f.width = std::min(longest, std::max<std::size_t>(max_prefix, 1));
  if (f.width == 0) f.width = 1;  // only empty strings: one zero byte keeps the layout uniform
  const auto bytes = static_cast<std::size_t>(off[c.length] - off[0]);
  f.tie_break = longest > f.width || (bytes > 0 && std::memchr(c.values.data() + off[0], 0, bytes) != nullptr);
}

template <class T>
bool has_nan(const Column& c) {
  for (const T v : c.numbers<T>())
    if (std::isnan(v)) return true;
  return false;
}

bool float_column_has_nan(const Column& c) {
  if (c.type == ColumnType::f32) return has_nan<float>(c);
  if (c.type == ColumnType::f64) return has_nan<double>(c);
  return false;
}

}  // namespace

KeyLayout plan_key_layout(const Table& table, const SortSpec& spec, const TableSortOptions& options) {
  if (spec.by.empty()) throw UsageError("sort needs at least one key column");
  KeyLayout l;
  l.nulls = spec.nulls;
  for (const auto& key : spec.by) {
    for (const auto& f : l.fields)
      if (table.column(f.column).name == key.column)
        throw UsageError(fmt::format("sort key '{}' is named twice", key.column));
    const Column& c = table.column(key.column);  // UsageError naming the column when absent
    KeyField f;
    f.column = static_cast<std::size_t>(&c - table.columns().data());
    f.type = c.type;
    f.descending = key.order == SortOrder::descending;
    f.nan_missing = options.nan_is_missing && is_floating(c.type);
    f.null_byte = c.missing_count() > 0 || (f.nan_missing && float_column_has_nan(c));
    if (c.type == ColumnType::str) plan_string_field(c, options.string_prefix, f);
    else f.width = value_width(c.type);
    l.fields.push_back(f);
  }
  place_fields(l);
  return l;
}

void place_fields(KeyLayout& l) {
  l.bytes = 0;
  l.first_tie_break = -1;
  for (std::size_t i = 0; i < l.fields.size(); ++i) {
    KeyField& f = l.fields[i];
    f.offset = l.bytes;
    l.bytes += (f.null_byte ? 1 : 0) + f.width;
    if (f.tie_break && l.first_tie_break < 0) {
      l.first_tie_break = static_cast<int>(i);
      l.exact_bytes = l.bytes;
    }
  }
  l.words = std::max<std::size_t>(1, (l.bytes + 7) / 8);
  if (l.first_tie_break < 0) l.exact_bytes = l.bytes;
}

void join_layout(KeyLayout& into, const KeyLayout& other) {
  if (into.fields.size() != other.fields.size()) throw std::logic_error("join_layout: layouts of other keys");
  for (std::size_t i = 0; i < into.fields.size(); ++i) {
    KeyField& f = into.fields[i];
    const KeyField& g = other.fields[i];
    f.null_byte = f.null_byte || g.null_byte;
    f.width = std::max(f.width, g.width);
    f.tie_break = f.tie_break || g.tie_break;
  }
  place_fields(into);
}

std::string describe(const KeyLayout& l, const Table& table) {
  std::string s = fmt::format("normalised key: {} bytes in {} word{}", l.bytes, l.words, l.words == 1 ? "" : "s");
  for (const auto& f : l.fields) {
    s += fmt::format("; {} {}{}{} {}", table.column(f.column).name, to_string(f.type), f.descending ? " desc" : "",
                     f.null_byte ? " +null byte" : "",
                     f.type == ColumnType::str ? fmt::format("prefix {}", f.width) : fmt::format("{} B", f.width));
    if (f.tie_break) s += " (ties: whole strings)";
  }
  return s;
}

namespace {

template <class U>
void put_big_endian(std::uint8_t* p, U v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * (width - 1 - i)));
}

// NaN and -0.0 made one value each, so that equal keys encode alike.
template <class T>
T canonical(T v) {
  if (std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
  return v == T(0) ? T(0) : v;
}

// Whether row i of a key column sorts as missing.
template <class T>
bool missing_at(const Column& c, const KeyField& f, std::span<const T> v, std::size_t i) {
  if (!c.present(i)) return true;
  if constexpr (std::is_floating_point_v<T>)
    if (f.nan_missing && std::isnan(v[i])) return true;
  return false;
}

// Writes one field of rows [begin, end) into row-major bytes (stride bytes per row).
template <class T>
void encode_numbers(const Column& c, const KeyField& f, NullOrder nulls, std::size_t begin, std::size_t end,
                    std::uint8_t* rows, std::size_t stride) {
  const auto v = c.numbers<T>();
  const std::uint8_t missing = nulls == NullOrder::last ? 1 : 0;
  const std::size_t vo = f.offset + (f.null_byte ? 1 : 0);
  for (std::size_t i = begin; i < end; ++i) {
    std::uint8_t* p = rows + (i - begin) * stride;
    if (f.null_byte && missing_at(c, f, v, i)) {
      p[f.offset] = missing;
      std::memset(p + vo, 0, f.width);
      continue;
    }
    if (f.null_byte) p[f.offset] = std::uint8_t(1 - missing);
    T x = v[i];
    if constexpr (std::is_floating_point_v<T>) x = canonical(x);
    auto b = to_ordered(x);
    if (f.descending) b = ~b;
    put_big_endian(p + vo, b, sizeof(T));
  }
}

void encode_strings(const Column& c, const KeyField& f, NullOrder nulls, std::size_t begin, std::size_t end,
                    std::uint8_t* rows, std::size_t stride) {
  const std::uint8_t missing = nulls == NullOrder::last ? 1 : 0;
  const std::size_t vo = f.offset + (f.null_byte ? 1 : 0);
  for (std::size_t i = begin; i < end; ++i) {
    std::uint8_t* p = rows + (i - begin) * stride;
    if (f.null_byte) p[f.offset] = c.present(i) ? std::uint8_t(1 - missing) : missing;
    std::uint8_t* q = p + vo;
    std::memset(q, 0, f.width);
    if (!c.present(i)) continue;
    const auto s = c.string(i);
    std::memcpy(q, s.data(), std::min(s.size(), f.width));
    if (f.descending)
      for (std::size_t k = 0; k < f.width; ++k) q[k] = std::uint8_t(~q[k]);
  }
}

std::uint64_t load_big_endian(const std::uint8_t* p) {
  std::uint64_t w;
  std::memcpy(&w, p, 8);
  return std::endian::native == std::endian::little ? __builtin_bswap64(w) : w;
}

}  // namespace

void encode_keys(const Table& table, const KeyLayout& l, std::size_t begin, std::size_t end, KeyWords& out) {
  constexpr std::size_t kBlock = 2048;  // rows encoded row-major in cache, then split into words
  const std::size_t stride = l.words * 8;
  std::vector<std::uint8_t> block(kBlock * stride);
  for (std::size_t b = begin; b < end; b += kBlock) {
    const std::size_t e = std::min(end, b + kBlock);
    std::memset(block.data(), 0, (e - b) * stride);
    for (const auto& f : l.fields) {
      const Column& c = table.column(f.column);
      if (f.type == ColumnType::str) encode_strings(c, f, l.nulls, b, e, block.data(), stride);
      else
        visit_numeric(f.type, [&](auto t) { encode_numbers<decltype(t)>(c, f, l.nulls, b, e, block.data(), stride); });
    }
    for (std::size_t w = 0; w < l.words; ++w) {
      std::uint64_t* dst = out.word(w);
      for (std::size_t i = b; i < e; ++i) dst[i] = load_big_endian(block.data() + (i - b) * stride + w * 8);
    }
  }
}

KeyWords encode_keys(const Table& table, const KeyLayout& l, int threads) {
  KeyWords k;
  k.rows = table.rows();
  k.words = l.words;
  k.data.resize(k.rows * k.words);
  const int T = threads > 0 ? threads : default_threads();
  const std::size_t n = k.rows;
  constexpr std::size_t kBlock = 65536;  // rows a thread encodes at a time
  parallel_for((n + kBlock - 1) / kBlock, T,
               [&](std::size_t i) { encode_keys(table, l, i * kBlock, std::min(n, (i + 1) * kBlock), k); });
  return k;
}

namespace {

// The bits that differ from row 0's in some row, per word.
std::vector<std::uint64_t> varying_bits(const KeyWords& k, int T) {
  std::vector<std::uint64_t> vary(k.words, 0);
  for (std::size_t w = 0; w < k.words; ++w) {
    const std::uint64_t* p = k.word(w);
    const std::uint64_t first = p[0];
    std::uint64_t v = 0;
#pragma omp parallel for num_threads(T) schedule(static) reduction(| : v)
    for (std::size_t r = 0; r < k.rows; ++r) v |= p[r] ^ first;
    vary[w] = v;
  }
  return vary;
}

}  // namespace

std::size_t drop_constant_bytes(KeyLayout& l, KeyWords& k, int threads) {
  if (k.rows == 0) return 0;
  const int T = threads > 0 ? threads : default_threads();
  const auto vary = varying_bits(k, T);
  std::vector<std::size_t> kept;  // byte positions (word * 8 + byte, most significant first)
  for (std::size_t p = 0; p < k.words * 8; ++p)
    if ((vary[p / 8] >> (56 - 8 * (p % 8))) & 0xff) kept.push_back(p);
  const std::size_t words = std::max<std::size_t>(1, (kept.size() + 7) / 8);
  if (words == k.words) return 0;
  KeyWords packed;
  packed.rows = k.rows;
  packed.words = words;
  packed.data.resize(k.rows * words);
#pragma omp parallel for num_threads(T) schedule(static)
  for (std::size_t r = 0; r < k.rows; ++r) {
    for (std::size_t w = 0; w < words; ++w) {
      std::uint64_t out = 0;
      for (std::size_t i = w * 8; i < std::min(kept.size(), w * 8 + 8); ++i) {
        const std::size_t p = kept[i];
        const std::uint64_t byte = (k.at(p / 8, r) >> (56 - 8 * (p % 8))) & 0xff;
        out |= byte << (56 - 8 * (i % 8));
      }
      packed.data[w * k.rows + r] = out;
    }
  }
  l.exact_bytes = static_cast<std::size_t>(
      std::count_if(kept.begin(), kept.end(), [&](std::size_t p) { return p < l.exact_bytes; }));
  l.words = words;
  const std::size_t dropped = k.words * 8 - kept.size();
  k = std::move(packed);
  return dropped;
}

namespace {

template <class T>
int compare_numbers(const Column& ca, std::size_t a, const Column& cb, std::size_t b) {
  T x = ca.numbers<T>()[a], y = cb.numbers<T>()[b];
  if constexpr (std::is_floating_point_v<T>) x = canonical(x), y = canonical(y);
  const auto ox = to_ordered(x), oy = to_ordered(y);
  return ox < oy ? -1 : ox > oy ? 1 : 0;
}

bool sorts_missing(const Column& c, const KeyField& f, std::size_t i) {
  if (f.type == ColumnType::str) return !c.present(i);
  return visit_numeric(f.type, [&](auto t) {
    using T = decltype(t);
    return missing_at<T>(c, f, c.numbers<T>(), i);
  });
}

}  // namespace

int compare_field(const Table& ta, std::size_t a, const Table& tb, std::size_t b, const KeyField& f, NullOrder nulls) {
  const Column& ca = ta.column(f.column);
  const Column& cb = tb.column(f.column);
  const bool ma = sorts_missing(ca, f, a), mb = sorts_missing(cb, f, b);
  if (ma || mb) {
    if (ma && mb) return 0;
    const int missing_after = nulls == NullOrder::last ? 1 : -1;
    return ma ? missing_after : -missing_after;
  }
  int r;
  if (f.type == ColumnType::str) {
    const int s = ca.string(a).compare(cb.string(b));
    r = s < 0 ? -1 : s > 0 ? 1 : 0;
  } else {
    r = visit_numeric(f.type, [&](auto t) { return compare_numbers<decltype(t)>(ca, a, cb, b); });
  }
  return f.descending ? -r : r;
}

int compare_rows_from(const Table& table, const KeyLayout& l, std::size_t from, std::size_t a, std::size_t b) {
  for (std::size_t i = from; i < l.fields.size(); ++i)
    if (const int c = compare_field(table, a, table, b, l.fields[i], l.nulls); c != 0) return c;
  return 0;
}

int compare_key_bytes(const KeyWords& keys, std::size_t bytes, std::size_t a, std::size_t b) {
  return compare_key_bytes(keys, a, keys, b, bytes);
}

}  // namespace tandem::detail
