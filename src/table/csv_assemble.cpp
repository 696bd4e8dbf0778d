#include "table/csv_assemble.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace tandem::csv {
namespace {

// Order of inferred types: a column takes the highest any piece found.
int rank(const PieceColumn& c) {
  if (!c.decided) return 0;
  switch (c.type) {
    case ColumnType::i64: return 1;
    case ColumnType::f64: return 2;
    default: return 3;
  }
}

ColumnType inferred_type(const std::vector<Piece>& pieces, std::size_t j, std::optional<ParseError>& overflow) {
  int top = 0;
  bool fraction = false;
  for (const auto& p : pieces) {
    const auto& c = p.columns[j];
    top = std::max(top, rank(c));
    fraction = fraction || (rank(c) == 2 && c.saw_fraction);
  }
  if (top == 1) return ColumnType::i64;
  if (top != 2) return ColumnType::str;
  if (fraction) return ColumnType::f64;
  // Only integers, some beyond i64: name the first of those.
  for (const auto& p : pieces) {
    const auto& c = p.columns[j];
    if (c.overflow_pos == kNone || (overflow && overflow->pos < c.overflow_pos)) continue;
    overflow = ParseError{c.overflow_pos, j + 1,
                          fmt::format("'{}' is an integer beyond the range of i64 (name the column's type in the "
                                      "schema to read it as f64 or str)",
                                      printable(c.overflow_text.data(), c.overflow_text.data() + c.overflow_text.size()))};
  }
  return ColumnType::f64;
}

// Brings piece column c to type t where that needs no second parse; false when it does.
bool convert(PieceColumn& c, ColumnType t, std::size_t rows) {
  if (!c.decided) {
    settle_undecided(c, t, rows, rows);
    if (t != ColumnType::str) {  // every row is missing
      c.missing.resize(rows);
      std::iota(c.missing.begin(), c.missing.end(), std::size_t{0});
    }
    return true;
  }
  if (c.type == t) return true;
  if (c.type == ColumnType::i64 && t == ColumnType::f64) {
    convert_to_f64(c, rows);
    return true;
  }
  return false;
}

template <class T>
Buffer uninitialized(std::size_t n, T*& data) {
  std::shared_ptr<T[]> owner(new T[std::max<std::size_t>(n, 1)]);  // default-initialised: not zeroed
  data = owner.get();
  return Buffer::borrow(owner.get(), n * sizeof(T), std::shared_ptr<const void>(owner, owner.get()));
}

Buffer validity_of(const std::vector<Piece>& pieces, std::size_t j, const std::vector<std::size_t>& row_base) {
  std::size_t missing = 0;
  for (const auto& p : pieces) missing += p.columns[j].missing.size();
  if (missing == 0) return {};
  std::uint8_t* bits = nullptr;
  const std::size_t rows = row_base.back();
  Buffer b = uninitialized((rows + 7) / 8, bits);
  std::memset(bits, 0xff, (rows + 7) / 8);
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (const std::size_t r : pieces[i].columns[j].missing) {
      const std::size_t row = row_base[i] + r;
      bits[row >> 3] &= static_cast<std::uint8_t>(~(1u << (row & 7)));
    }
  return b;
}

}  // namespace

Reconciled reconcile_types(std::vector<Piece>& pieces, const std::vector<ColumnStart>& starts) {
  Reconciled r;
  r.reparse.assign(pieces.size(), false);
  for (std::size_t j = 0; j < starts.size(); ++j) {
    const ColumnType t = starts[j].fixed ? starts[j].type : inferred_type(pieces, j, r.overflow);
    r.types.push_back(t);
    for (std::size_t i = 0; i < pieces.size(); ++i)
      if (!convert(pieces[i].columns[j], t, pieces[i].rows)) r.reparse[i] = true;
  }
  return r;
}

std::vector<Column> assemble(std::vector<Piece>& pieces, const std::vector<std::string>& names,
                             const std::vector<ColumnType>& types, int threads) {
  const std::size_t ncols = names.size(), npieces = pieces.size();
  std::vector<std::size_t> row_base(npieces + 1, 0);
  for (std::size_t i = 0; i < npieces; ++i) row_base[i + 1] = row_base[i] + pieces[i].rows;
  const std::size_t rows = row_base.back();
  std::vector<Column> columns(ncols);
  std::vector<std::byte*> values(ncols, nullptr);
  std::vector<std::uint64_t*> offsets(ncols, nullptr);
  std::vector<std::size_t> byte_base(ncols * (npieces + 1), 0);  // [column][piece]
  for (std::size_t j = 0; j < ncols; ++j) {
    Column& c = columns[j];
    c.name = names[j];
    c.type = types[j];
    c.length = rows;
    if (types[j] != ColumnType::str) {
      c.values = uninitialized(rows * value_width(types[j]), values[j]);
      continue;
    }
    std::size_t* base = &byte_base[j * (npieces + 1)];
    for (std::size_t i = 0; i < npieces; ++i) base[i + 1] = base[i] + pieces[i].columns[j].bytes.size();
    char* bytes = nullptr;
    c.values = uninitialized(base[npieces], bytes);
    values[j] = reinterpret_cast<std::byte*>(bytes);
    c.offsets = uninitialized(rows + 1, offsets[j]);
    offsets[j][rows] = base[npieces];
  }
#pragma omp parallel for collapse(2) num_threads(threads) schedule(dynamic, 1)
  for (std::size_t j = 0; j < ncols; ++j) {
    for (std::size_t i = 0; i < npieces; ++i) {
      const PieceColumn& pc = pieces[i].columns[j];
      const std::size_t n = pieces[i].rows;
      if (types[j] != ColumnType::str) {
        const std::size_t w = value_width(types[j]);
        if (n) std::memcpy(values[j] + row_base[i] * w, pc.values.get(), n * w);
        continue;
      }
      const std::size_t base = byte_base[j * (npieces + 1) + i];
      if (pc.bytes.size()) std::memcpy(values[j] + base, pc.bytes.data(), pc.bytes.size());
      std::uint64_t* out = offsets[j] + row_base[i];
      for (std::size_t k = 0; k < n; ++k) out[k] = pc.offsets[k] + base;
    }
  }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t j = 0; j < ncols; ++j) columns[j].validity = validity_of(pieces, j, row_base);
  return columns;
}

}  // namespace tandem::csv
