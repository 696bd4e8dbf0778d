#include "dist/table_wire.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/core/hash.hpp"

namespace tandem::dist {
namespace {

void put_u64(std::vector<std::byte>& out, std::uint64_t v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

// Every field starts at a multiple of 8 bytes, so that numbers read in place are aligned.
constexpr std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

void put_bytes(std::vector<std::byte>& out, const void* p, std::size_t n) {
  const auto* b = static_cast<const std::byte*>(p);
  out.insert(out.end(), b, b + n);
  out.resize(out.size() + (padded(n) - n), std::byte{0});
}

void put_buffer(std::vector<std::byte>& out, const Buffer& b) {
  put_u64(out, b.size());
  put_bytes(out, b.data(), b.size());
}

struct Reader {
  std::shared_ptr<const std::vector<std::byte>> all;
  std::size_t at, end;
  std::uint64_t u64() {
    if (end - at < 8) throw Error("dist: a received table is cut short");
    std::uint64_t v;
    std::memcpy(&v, all->data() + at, 8);
    at += 8;
    return v;
  }
  Buffer buffer() {
    const std::uint64_t n = u64();
    if (end - at < n) throw Error("dist: a received table is cut short");
    Buffer b = Buffer::borrow(all->data() + at, n, all);
    at += std::min<std::size_t>(padded(n), end - at);
    return b;
  }
};

}  // namespace

void write_table(const Table& t, std::vector<std::byte>& out) {
  put_u64(out, t.num_columns());
  for (const Column& c : t.columns()) {
    put_u64(out, c.name.size());
    put_bytes(out, c.name.data(), c.name.size());
    put_u64(out, std::uint64_t(c.type));
    put_u64(out, c.length);
    put_buffer(out, c.values);
    put_buffer(out, c.offsets);
    put_buffer(out, c.validity);
  }
}

Table empty_like(const Table& t) {
  std::vector<Column> cols;
  for (const Column& c : t.columns()) {
    Column e;
    e.name = c.name;
    e.type = c.type;
    e.length = 0;
    if (c.type == ColumnType::str) e.offsets = Buffer::take(std::vector<std::uint64_t>{0});
    cols.push_back(std::move(e));
  }
  return Table(std::move(cols));
}

Table read_tables(std::shared_ptr<const std::vector<std::byte>> bytes, const Table& like) {
  std::vector<Table> parts;
  Reader r{bytes, 0, bytes->size()};
  while (r.at < r.end) {
    const std::uint64_t ncols = r.u64();
    std::vector<Column> cols;
    for (std::uint64_t i = 0; i < ncols; ++i) {
      Column c;
      const std::uint64_t name_length = r.u64();
      if (r.end - r.at < name_length) throw Error("dist: a received table is cut short");
      c.name.assign(reinterpret_cast<const char*>(bytes->data() + r.at), name_length);
      r.at += std::min<std::size_t>(padded(name_length), r.end - r.at);
      c.type = ColumnType(r.u64());
      c.length = r.u64();
      c.values = r.buffer();
      c.offsets = r.buffer();
      c.validity = r.buffer();
      cols.push_back(std::move(c));
    }
    parts.push_back(Table(std::move(cols)));
  }
  return concat_tables(parts, like);
}

Table concat_tables(const std::vector<Table>& parts, const Table& like) {
  if (parts.empty()) return empty_like(like);
  if (parts.size() == 1) return parts.front();
  std::vector<Column> out;
  for (std::size_t ci = 0; ci < like.num_columns(); ++ci) {
    const Column& shape = like.column(ci);
    std::size_t rows = 0, bytes = 0;
    bool any_missing = false;
    for (const Table& p : parts) {
      const Column& c = p.column(ci);
      if (c.name != shape.name || c.type != shape.type)
        throw UsageError(fmt::format("dist: column {} is '{}' ({}) on one rank and '{}' ({}) on another", ci,
                                     shape.name, to_string(shape.type), c.name, to_string(c.type)));
      rows += c.length;
      bytes += shape.type == ColumnType::str ? c.string_offsets()[c.length] : c.length * value_width(c.type);
      any_missing |= !c.validity.empty();
    }
    std::vector<std::byte> values(bytes);
    std::vector<std::uint64_t> offsets;
    if (shape.type == ColumnType::str) offsets.reserve(rows + 1), offsets.push_back(0);
    std::vector<std::uint8_t> validity(any_missing ? (rows + 7) / 8 : 0, 0);
    std::size_t row = 0, at = 0;
    for (const Table& p : parts) {
      const Column& c = p.column(ci);
      const std::size_t n =
          shape.type == ColumnType::str ? c.string_offsets()[c.length] : c.length * value_width(c.type);
      if (n)
        std::memcpy(values.data() + at, c.values.data() + (shape.type == ColumnType::str ? c.string_offsets()[0] : 0),
                    n);
      if (shape.type == ColumnType::str) {
        const auto o = c.string_offsets();
        for (std::size_t i = 1; i <= c.length; ++i) offsets.push_back(at + (o[i] - o[0]));
      }
      if (any_missing)
        for (std::size_t i = 0; i < c.length; ++i)
          if (c.present(i)) validity[(row + i) >> 3] |= std::uint8_t(1u << ((row + i) & 7));
      row += c.length;
      at += n;
    }
    Column col;
    col.name = shape.name;
    col.type = shape.type;
    col.length = rows;
    col.values = Buffer::take(std::move(values));
    if (shape.type == ColumnType::str) col.offsets = Buffer::take(std::move(offsets));
    if (any_missing) col.validity = Buffer::take(std::move(validity));
    out.push_back(std::move(col));
  }
  return Table(std::move(out));
}

void hash_rows(const Table& t, std::span<const std::size_t> key_columns, std::span<std::uint64_t> out) {
  std::fill(out.begin(), out.end(), 0x9e3779b97f4a7c15ULL);
  for (std::size_t kc : key_columns) {
    const Column& c = t.column(kc);
    auto combine = [&](std::size_t i, std::uint64_t h) {
      out[i] = mix64(out[i] ^ (h + 0x9e3779b97f4a7c15ULL + (out[i] << 6)));
    };
    constexpr std::uint64_t kMissing = 0x5bd1e995u;
    if (c.type == ColumnType::str) {
      for (std::size_t i = 0; i < c.length; ++i) {
        const std::string_view s = c.string(i);
        combine(i, c.present(i) ? hash_bytes(s.data(), s.size()) : kMissing);
      }
      continue;
    }
    visit_numeric(c.type, [&](auto zero) {
      using T = decltype(zero);
      const auto v = c.numbers<T>();
      for (std::size_t i = 0; i < c.length; ++i) {
        if (!c.present(i)) {
          combine(i, kMissing);
          continue;
        }
        if constexpr (std::is_floating_point_v<T>) {
          double x = double(v[i]);
          if (x == 0) x = 0;  // -0.0 and +0.0 form one group
          if (std::isnan(x)) x = std::numeric_limits<double>::quiet_NaN();
          std::uint64_t bits;
          std::memcpy(&bits, &x, 8);
          combine(i, mix64(bits));
        } else {
          combine(i, mix64(std::uint64_t(std::int64_t(v[i]))));
        }
      }
    });
  }
}

}  // namespace tandem::dist
