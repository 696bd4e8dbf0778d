#include "table/table_wire.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "table/made_here.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem {
namespace {

// Every field starts at a multiple of 8 bytes, so that numbers read in place are aligned.
constexpr std::size_t padded(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

struct Reader {
  std::shared_ptr<const std::byte> all;
  std::size_t at, end;
  std::uint64_t u64() {
    if (end - at < 8) throw Error("dist: a received table is cut short");
    std::uint64_t v;
    std::memcpy(&v, all.get() + at, 8);
    at += 8;
    return v;
  }
  Buffer buffer() {
    const std::uint64_t n = u64();
    if (end - at < n) throw Error("dist: a received table is cut short");
    Buffer b = Buffer::borrow(all.get() + at, n, all);
    at += std::min<std::size_t>(padded(n), end - at);
    return b;
  }
};

// Writes fields in place: a u64, or n bytes padded with zeros to a multiple of 8.
struct Cursor {
  std::byte* p;
  void u64(std::uint64_t v) {
    std::memcpy(p, &v, 8);
    p += 8;
  }
  // Room for n bytes, the padding after them zeroed; returns where the n bytes go.
  std::byte* field(std::size_t n) {
    std::byte* at = p;
    std::memset(p + n, 0, padded(n) - n);
    p += padded(n);
    return at;
  }
};

std::size_t string_bytes(const Column& c, std::span<const std::size_t> rows) {
  std::size_t n = 0;
  for (const std::size_t r : rows) n += c.string(r).size();
  return n;
}

// The bytes write_table gives column c gathered at `rows`.
std::size_t column_image_bytes(const Column& c, std::span<const std::size_t> rows) {
  const std::size_t n = rows.size();
  const bool str = c.type == ColumnType::str;
  const std::size_t values = str ? string_bytes(c, rows) : n * value_width(c.type);
  const std::size_t offsets = str ? (n + 1) * sizeof(std::uint64_t) : 0;
  const std::size_t validity = c.validity.empty() ? 0 : (n + 7) / 8;
  return 8 + padded(c.name.size()) + 16 + 8 + padded(values) + 8 + padded(offsets) + 8 + padded(validity);
}

// Column c gathered at `rows`, written at `out` as write_table writes a column.
void write_column_image(const Column& c, std::span<const std::size_t> rows, std::byte* out) {
  const std::size_t n = rows.size();
  Cursor w{out};
  w.u64(c.name.size());
  if (!c.name.empty()) std::memcpy(w.field(c.name.size()), c.name.data(), c.name.size());
  w.u64(std::uint64_t(c.type));
  w.u64(n);
  if (c.type == ColumnType::str) {
    const std::size_t total = string_bytes(c, rows);
    w.u64(total);
    std::byte* bytes = w.field(total);
    w.u64((n + 1) * sizeof(std::uint64_t));
    std::byte* offsets = w.field((n + 1) * sizeof(std::uint64_t));
    std::uint64_t at = 0;
    std::memcpy(offsets, &at, 8);
    for (std::size_t i = 0; i < n; ++i) {
      const std::string_view v = c.string(rows[i]);
      if (!v.empty()) std::memcpy(bytes + at, v.data(), v.size());
      at += v.size();
      std::memcpy(offsets + (i + 1) * 8, &at, 8);
    }
  } else {
    visit_numeric(c.type, [&](auto zero) {
      using T = decltype(zero);
      w.u64(n * sizeof(T));
      std::byte* values = w.field(n * sizeof(T));
      const auto v = c.numbers<T>();
      for (std::size_t i = 0; i < n; ++i) std::memcpy(values + i * sizeof(T), &v[rows[i]], sizeof(T));
    });
    w.u64(0);  // no offsets
  }
  if (c.validity.empty()) {
    w.u64(0);
    return;
  }
  w.u64((n + 7) / 8);
  std::byte* bits = w.field((n + 7) / 8);
  std::memset(bits, 0, (n + 7) / 8);
  for (std::size_t i = 0; i < n; ++i)
    if (c.present(rows[i])) bits[i >> 3] |= std::byte(1u << (i & 7));
}

}  // namespace

TableImages write_table_images(const Table& t, std::span<const std::size_t> rows, std::span<const std::size_t> starts,
                               int threads) {
  const std::size_t lists = starts.size() - 1, cols = t.num_columns();
  // Each (list, column) image's bytes, then their places: a list's image is its column count
  // and its columns; an empty list has no image.
  std::vector<std::size_t> at(lists * cols + 1, 0);
  auto list_rows = [&](std::size_t d) { return rows.subspan(starts[d], starts[d + 1] - starts[d]); };
#pragma omp parallel for collapse(2) num_threads(std::max(1, threads)) schedule(dynamic)
  for (std::size_t d = 0; d < lists; ++d)
    for (std::size_t c = 0; c < cols; ++c)
      at[d * cols + c + 1] = starts[d] == starts[d + 1] ? 0 : column_image_bytes(t.column(c), list_rows(d));
  TableImages out;
  out.sizes.assign(lists, 0);
  std::vector<std::size_t> table_at(lists, 0);
  std::size_t total = 0;
  for (std::size_t d = 0; d < lists; ++d) {
    table_at[d] = total;
    const bool empty = starts[d] == starts[d + 1];
    total += empty ? 0 : 8;  // the column count
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t bytes = at[d * cols + c + 1];
      at[d * cols + c] = total;
      total += bytes;
    }
    out.sizes[d] = total - table_at[d];
  }
  out.bytes.resize(std::max<std::size_t>(total, 1));  // written in full below
  for (std::size_t d = 0; d < lists; ++d)
    if (out.sizes[d]) Cursor{out.bytes.data() + table_at[d]}.u64(cols);
#pragma omp parallel for collapse(2) num_threads(std::max(1, threads)) schedule(dynamic)
  for (std::size_t d = 0; d < lists; ++d)
    for (std::size_t c = 0; c < cols; ++c)
      if (starts[d] != starts[d + 1])
        write_column_image(t.column(c), list_rows(d), out.bytes.data() + at[d * cols + c]);
  return out;
}

void write_table(const Table& t, std::vector<std::byte>& out) {
  std::vector<std::size_t> rows(t.rows());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  const std::size_t starts[2] = {0, rows.size()};
  const TableImages image = write_table_images(t, rows, starts, 1);
  out.insert(out.end(), image.bytes.data(), image.bytes.data() + image.sizes[0]);
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

Table read_tables(std::shared_ptr<const std::vector<std::byte>> bytes, const Table& like, int threads) {
  const std::size_t size = bytes->size();
  return read_tables(std::shared_ptr<const std::byte>(bytes, bytes->data()), size, like, threads);
}

Table read_tables(std::shared_ptr<const std::byte> bytes, std::size_t size, const Table& like, int threads) {
  std::vector<Table> parts;
  Reader r{bytes, 0, size};
  while (r.at < r.end) {
    const std::uint64_t ncols = r.u64();
    std::vector<Column> cols;
    for (std::uint64_t i = 0; i < ncols; ++i) {
      Column c;
      const std::uint64_t name_length = r.u64();
      if (r.end - r.at < name_length) throw Error("dist: a received table is cut short");
      c.name.assign(reinterpret_cast<const char*>(bytes.get() + r.at), name_length);
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
  return concat_tables(parts, like, threads);
}

namespace {

// A string column's bytes and a number column's values: what a part adds to the joined column.
std::size_t part_bytes(const Column& c) {
  if (c.type != ColumnType::str) return c.length * value_width(c.type);
  const auto o = c.string_offsets();
  return o[c.length] - o[0];
}

}  // namespace

Table concat_tables(const std::vector<Table>& parts, const Table& like, int threads) {
  if (parts.empty()) return empty_like(like);
  if (parts.size() == 1) return parts.front();
  const std::size_t ncols = like.num_columns(), nparts = parts.size();
  for (const Table& p : parts)
    if (p.num_columns() != ncols)
      throw UsageError(fmt::format("concatenate: parts of {} and {} columns", ncols, p.num_columns()));
  // Where each part's rows and bytes start in each joined column; the buffers are taken (not
  // zeroed: every byte is copied in; from 2 MiB up on the scratch pool's huge pages) before the
  // copies, which then run a (column, part) pair at a time on every thread: one key column of
  // sixty scan chunks is copied by all cores, not one.
  struct Joined {
    std::vector<std::size_t> row, byte;  // per part, and the totals last
    bool any_missing{false};
    Scratch<std::byte> values;
    Scratch<std::uint64_t> offsets;
    std::vector<std::uint8_t> validity;
  };
  std::vector<Joined> joined(ncols);
  for (std::size_t ci = 0; ci < ncols; ++ci) {
    const Column& shape = like.column(ci);
    Joined& j = joined[ci];
    j.row.assign(nparts + 1, 0);
    j.byte.assign(nparts + 1, 0);
    for (std::size_t pi = 0; pi < nparts; ++pi) {
      const Column& c = parts[pi].column(ci);
      if (c.name != shape.name || c.type != shape.type)
        throw UsageError(fmt::format("concatenate: column {} is '{}' ({}) in one part and '{}' ({}) in another", ci,
                                     shape.name, to_string(shape.type), c.name, to_string(c.type)));
      j.row[pi + 1] = j.row[pi] + c.length;
      j.byte[pi + 1] = j.byte[pi] + part_bytes(c);
      j.any_missing |= !c.validity.empty();
    }
    j.values = Scratch<std::byte>(j.byte[nparts]);
    if (shape.type == ColumnType::str) j.offsets = Scratch<std::uint64_t>(j.row[nparts] + 1);
  }
  parallel_for(ncols * nparts, std::max(1, threads), [&](std::size_t k) {
    const std::size_t ci = k / nparts, pi = k % nparts;
    Joined& j = joined[ci];
    const Column& c = parts[pi].column(ci);
    const bool str = c.type == ColumnType::str;
    const std::size_t first = str ? c.string_offsets()[0] : 0, n = j.byte[pi + 1] - j.byte[pi];
    if (n) std::memcpy(j.values.data() + j.byte[pi], c.values.data() + first, n);
    if (str) {
      const auto o = c.string_offsets();
      std::uint64_t* out = j.offsets.data() + j.row[pi];
      for (std::size_t i = 0; i < c.length; ++i) out[i] = j.byte[pi] + (o[i] - first);
    }
  });
  // Validity bits: a part's rows need not start on a byte, so each column's are set by one thread.
  parallel_for(ncols, std::max(1, threads), [&](std::size_t ci) {
    Joined& j = joined[ci];
    if (!j.any_missing) return;
    j.validity.assign((j.row[nparts] + 7) / 8, 0);
    for (std::size_t pi = 0; pi < nparts; ++pi) {
      const Column& c = parts[pi].column(ci);
      for (std::size_t i = 0, r = j.row[pi]; i < c.length; ++i, ++r)
        if (c.present(i)) j.validity[r >> 3] |= static_cast<std::uint8_t>(1u << (r & 7));
    }
  });
  std::vector<Column> out(ncols);
  for (std::size_t ci = 0; ci < ncols; ++ci) {
    Joined& j = joined[ci];
    Column& col = out[ci];
    col.name = like.column(ci).name;
    col.type = like.column(ci).type;
    col.length = j.row[nparts];
    if (col.type == ColumnType::str) {
      j.offsets[col.length] = j.byte[nparts];
      col.offsets = Buffer::take(std::move(j.offsets));
    }
    col.values = Buffer::take(std::move(j.values));
    if (j.any_missing) col.validity = Buffer::take(std::move(j.validity));
  }
  return Table(std::move(out), detail::kMadeHere);  // the parts' checked offsets, shifted
}

namespace {

// out[j] = the hash of row row_of(j)'s keys, j < out.size().
template <class RowOf>
void hash_rows_at(const Table& t, std::span<const std::size_t> key_columns, RowOf row_of, std::span<std::uint64_t> out,
                  int threads) {
  threads = std::max(1, threads);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0x9e3779b97f4a7c15ULL;
  for (std::size_t kc : key_columns) {
    const Column& c = t.column(kc);
    auto combine = [&](std::size_t j, std::uint64_t h) {
      out[j] = mix64(out[j] ^ (h + 0x9e3779b97f4a7c15ULL + (out[j] << 6)));
    };
    constexpr std::uint64_t kMissing = 0x5bd1e995u;
    if (c.type == ColumnType::str) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (std::size_t j = 0; j < out.size(); ++j) {
        const std::size_t i = row_of(j);
        const std::string_view s = c.string(i);
        combine(j, c.present(i) ? hash_bytes(s.data(), s.size()) : kMissing);
      }
      continue;
    }
    visit_numeric(c.type, [&](auto zero) {
      using T = decltype(zero);
      const auto v = c.numbers<T>();
#pragma omp parallel for num_threads(threads) schedule(static)
      for (std::size_t j = 0; j < out.size(); ++j) {
        const std::size_t i = row_of(j);
        if (!c.present(i)) {
          combine(j, kMissing);
          continue;
        }
        if constexpr (std::is_floating_point_v<T>) {
          double x = double(v[i]);
          if (x == 0) x = 0;  // -0.0 and +0.0 form one group
          if (std::isnan(x)) x = std::numeric_limits<double>::quiet_NaN();
          std::uint64_t bits;
          std::memcpy(&bits, &x, 8);
          combine(j, mix64(bits));
        } else {
          combine(j, mix64(std::uint64_t(std::int64_t(v[i]))));
        }
      }
    });
  }
}

}  // namespace

void hash_rows(const Table& t, std::span<const std::size_t> key_columns, std::span<std::uint64_t> out, int threads) {
  hash_rows_at(
      t, key_columns, [](std::size_t j) { return j; }, out, threads);
}

void hash_rows_from(const Table& t, std::span<const std::size_t> key_columns, std::size_t first,
                    std::span<std::uint64_t> out, int threads) {
  hash_rows_at(
      t, key_columns, [first](std::size_t j) { return first + j; }, out, threads);
}

void hash_some_rows(const Table& t, std::span<const std::size_t> key_columns, std::span<const std::size_t> rows,
                    std::span<std::uint64_t> out, int threads) {
  hash_rows_at(
      t, key_columns, [&](std::size_t j) { return rows[j]; }, out.first(rows.size()), threads);
}

}  // namespace tandem
