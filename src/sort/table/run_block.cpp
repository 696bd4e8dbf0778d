#include "run_block.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/uninit_allocator.hpp"

namespace tandem::detail {
namespace {

constexpr std::size_t kColumnHeader = 16;

constexpr std::size_t pad8(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

std::uint8_t width_for(std::uint64_t range) {
  return range <= 0xffu ? 1 : range <= 0xffffu ? 2 : range <= 0xffffffffu ? 4 : 8;
}

template <class T>
ColumnCoding plan_integers(const Column& c, int threads) {
  const auto v = c.numbers<T>();
  if (v.empty()) return {0, 1};
  T lo = v[0], hi = v[0];
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : lo) reduction(max : hi)
  for (std::size_t i = 0; i < v.size(); ++i) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
  // Modular differences: right for signed types too (hi >= lo, the range below 2^64).
  const std::uint64_t base = static_cast<std::uint64_t>(lo);
  return {base, width_for(static_cast<std::uint64_t>(hi) - base)};
}

// Bytes of one column's part of a block of n rows (`text`: a string column's bytes in it).
std::size_t column_bytes(const Column& c, const ColumnCoding& k, std::size_t n, std::size_t text) {
  std::size_t b = kColumnHeader + (c.validity.empty() ? 0 : pad8((n + 7) / 8));
  if (c.type == ColumnType::str) return b + pad8((n + 1) * 4) + pad8(text);
  return b + pad8(n * k.width);
}

template <class T, class U>
void put_narrow(std::byte* p, std::span<const T> v, std::span<const std::size_t> rows, std::uint64_t base) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    U u;
    if constexpr (std::is_floating_point_v<T>) u = std::bit_cast<U>(v[rows[i]]);
    else u = static_cast<U>(static_cast<std::uint64_t>(v[rows[i]]) - base);
    std::memcpy(p + i * sizeof(U), &u, sizeof(U));
  }
}

template <class T>
void put_numbers(std::byte* p, const Column& c, const ColumnCoding& k, std::span<const std::size_t> rows) {
  const auto v = c.numbers<T>();
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    return put_narrow<T, U>(p, v, rows, 0);
  } else {
    switch (k.width) {
      case 1: return put_narrow<T, std::uint8_t>(p, v, rows, k.base);
      case 2: return put_narrow<T, std::uint16_t>(p, v, rows, k.base);
      case 4: return put_narrow<T, std::uint32_t>(p, v, rows, k.base);
      default: return put_narrow<T, std::uint64_t>(p, v, rows, k.base);
    }
  }
}

void put_strings(std::byte* p, const Column& c, std::span<const std::size_t> rows) {
  std::byte* text = p + pad8((rows.size() + 1) * 4);
  std::uint32_t at = 0;
  std::memcpy(p, &at, 4);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto s = c.string(rows[i]);
    if (!s.empty()) std::memcpy(text + at, s.data(), s.size());
    at += static_cast<std::uint32_t>(s.size());
    std::memcpy(p + (i + 1) * 4, &at, 4);
  }
}

// Writes one column's part of a block at p (zeroed); returns the end.
std::byte* put_column(std::byte* p, const Column& c, const ColumnCoding& k, std::span<const std::size_t> rows,
                      std::size_t text) {
  std::byte* const end = p + column_bytes(c, k, rows.size(), text);
  std::memcpy(p, &k.base, 8);
  p[8] = static_cast<std::byte>(c.type == ColumnType::str ? 4 : k.width);
  p[9] = static_cast<std::byte>(c.validity.empty() ? 0 : 1);
  p += kColumnHeader;
  if (!c.validity.empty()) {
    auto* bits = reinterpret_cast<std::uint8_t*>(p);
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (c.present(rows[i])) bits[i >> 3] = static_cast<std::uint8_t>(bits[i >> 3] | (1u << (i & 7)));
    p += pad8((rows.size() + 7) / 8);
  }
  if (c.type == ColumnType::str) put_strings(p, c, rows);
  else visit_numeric(c.type, [&](auto t) { put_numbers<decltype(t)>(p, c, k, rows); });
  return end;
}

std::size_t string_bytes(const Column& c, std::span<const std::size_t> rows) {
  std::size_t n = 0;
  for (const auto r : rows) n += c.string(r).size();
  return n;
}

}  // namespace

std::vector<ColumnCoding> plan_codings(const Table& t, int threads) {
  std::vector<ColumnCoding> k;
  for (const auto& c : t.columns()) {
    if (c.type == ColumnType::str) k.push_back({0, 4});
    else if (is_floating(c.type)) k.push_back({0, static_cast<std::uint8_t>(value_width(c.type))});
    else k.push_back(visit_numeric(c.type, [&](auto z) { return plan_integers<decltype(z)>(c, threads); }));
  }
  return k;
}

BlockImages encode_blocks(const Table& t, std::span<const ColumnCoding> codings, std::span<const std::size_t> rows,
                          std::span<const std::size_t> starts, int threads) {
  const std::size_t blocks = starts.size() - 1, columns = t.num_columns();
  std::vector<std::size_t> text(blocks * columns, 0);  // string bytes per block and column
  BlockImages im;
  im.sizes.assign(blocks, 8);
  parallel_for(blocks, threads, [&](std::size_t b) {
    const auto r = rows.subspan(starts[b], starts[b + 1] - starts[b]);
    for (std::size_t c = 0; c < columns; ++c) {
      const Column& col = t.column(c);
      if (col.type == ColumnType::str) text[b * columns + c] = string_bytes(col, r);
      im.sizes[b] += column_bytes(col, codings[c], r.size(), text[b * columns + c]);
    }
  });
  std::vector<std::size_t> at(blocks + 1, 0);
  for (std::size_t b = 0; b < blocks; ++b) at[b + 1] = at[b] + im.sizes[b];
  im.bytes.assign(at[blocks], std::byte{0});
  parallel_for(blocks, threads, [&](std::size_t b) {
    const auto r = rows.subspan(starts[b], starts[b + 1] - starts[b]);
    std::byte* p = im.bytes.data() + at[b];
    const std::uint64_t n = r.size();
    std::memcpy(p, &n, 8);
    p += 8;
    for (std::size_t c = 0; c < columns; ++c) p = put_column(p, t.column(c), codings[c], r, text[b * columns + c]);
  });
  return im;
}

namespace {

template <class T>
using Uninit = std::vector<T, UninitAllocator<T>>;

template <class T, class U>
Buffer widen(const std::byte* p, std::size_t n, std::uint64_t base) {
  Uninit<T> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    U u;
    std::memcpy(&u, p + i * sizeof(U), sizeof(U));
    out[i] = static_cast<T>(base + u);
  }
  return Buffer::take(std::move(out));
}

template <class T>
Buffer read_numbers(const std::byte* p, std::size_t n, std::uint64_t base, std::uint8_t width,
                    const std::shared_ptr<const std::byte>& keep) {
  if constexpr (std::is_floating_point_v<T>) {
    return Buffer::borrow(p, n * sizeof(T), keep);
  } else {
    switch (width) {
      case 1: return widen<T, std::uint8_t>(p, n, base);
      case 2: return widen<T, std::uint16_t>(p, n, base);
      case 4: return widen<T, std::uint32_t>(p, n, base);
      default: return widen<T, std::uint64_t>(p, n, base);
    }
  }
}

}  // namespace

Table decode_block(std::shared_ptr<const std::byte> bytes, std::size_t size, const Table& like) {
  const std::byte* const start = bytes.get();
  std::size_t at = 0;
  auto take = [&](std::size_t n) {  // the next n bytes (padded), checked against the image's size
    if (pad8(n) > size - at) throw Error("sorting by runs: a run block read back is shorter than written");
    const std::byte* p = start + at;
    at += pad8(n);
    return p;
  };
  std::uint64_t rows = 0;
  std::memcpy(&rows, take(8), 8);
  Table t;
  for (const auto& l : like.columns()) {
    const std::byte* h = take(kColumnHeader);
    Column c;
    c.name = l.name;
    c.type = l.type;
    c.length = rows;
    std::uint64_t base = 0;
    std::memcpy(&base, h, 8);
    const auto width = static_cast<std::uint8_t>(h[8]);
    if (h[9] != std::byte{0}) c.validity = Buffer::borrow(take((rows + 7) / 8), (rows + 7) / 8, bytes);
    if (l.type == ColumnType::str) {
      const std::byte* o = take((rows + 1) * 4);
      Uninit<std::uint64_t> off(rows + 1);
      for (std::size_t i = 0; i <= rows; ++i) {
        std::uint32_t v;
        std::memcpy(&v, o + i * 4, 4);
        off[i] = v;
      }
      c.values = Buffer::borrow(take(off[rows]), off[rows], bytes);
      c.offsets = Buffer::take(std::move(off));
    } else {
      const std::byte* p = take(rows * width);
      c.values = visit_numeric(l.type, [&](auto z) { return read_numbers<decltype(z)>(p, rows, base, width, bytes); });
    }
    t.add(std::move(c));
  }
  return t;
}

}  // namespace tandem::detail
