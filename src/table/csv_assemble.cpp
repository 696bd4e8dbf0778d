#include "table/csv_assemble.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "table/raw_bytes.hpp"
#include "tandem/core/parallel.hpp"

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
  bool fraction = false, empty_string = false;
  for (const auto& p : pieces) {
    const auto& c = p.columns[j];
    top = std::max(top, rank(c));
    fraction = fraction || (rank(c) == 2 && c.saw_fraction);
    empty_string = empty_string || !c.empties.empty();
  }
  if (top == 3) return ColumnType::str;
  // No value at all: i64, every value missing, as the streaming scan infers it (sum(v) stays
  // missing rather than failing); quoted empty fields alone ("") are empty strings.
  if (top == 0) return empty_string ? ColumnType::str : ColumnType::i64;
  // A float beyond f64's range in a number column: name the first (a str column keeps it as text).
  for (const auto& p : pieces) {
    const auto& c = p.columns[j];
    if (c.huge_pos == kNone || (overflow && overflow->pos < c.huge_pos)) continue;
    overflow = ParseError{c.huge_pos, j + 1,
                          fmt::format("'{}' is beyond the range of f64 (write inf for infinity, or name the "
                                      "column's type str in the schema to keep it as text)",
                                      printable(c.huge_text.data(), c.huge_text.data() + c.huge_text.size()))};
  }
  if (top == 1) return ColumnType::i64;
  if (top != 2) return ColumnType::str;
  if (fraction) return ColumnType::f64;
  // Only integers, some beyond i64: name the first of those.
  for (const auto& p : pieces) {
    const auto& c = p.columns[j];
    if (c.overflow_pos == kNone || (overflow && overflow->pos < c.overflow_pos)) continue;
    overflow =
        ParseError{c.overflow_pos, j + 1,
                   fmt::format("'{}' is an integer beyond the range of i64 (name the column's type in the "
                               "schema to read it as f64 or str)",
                               printable(c.overflow_text.data(), c.overflow_text.data() + c.overflow_text.size()))};
  }
  return ColumnType::f64;
}

// Brings piece column c to type t where that needs no second parse; false when it does.
bool convert(PieceColumn& c, ColumnType t, std::size_t rows) {
  if (!c.decided) {
    settle_undecided(c, t, rows);
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

Buffer view(const std::shared_ptr<std::byte>& owner, const std::byte* data, std::size_t bytes) {
  return Buffer::borrow(data, bytes, std::shared_ptr<const void>(owner, owner.get()));
}

Buffer validity_of(const std::vector<Piece>& pieces, std::size_t j, const std::vector<std::size_t>& row_base) {
  std::size_t missing = 0;
  for (const auto& p : pieces) missing += p.columns[j].missing.size();
  if (missing == 0) return {};
  const std::size_t bytes = (row_base.back() + 7) / 8;
  auto owner = tandem::detail::raw_bytes(bytes);
  auto* bits = reinterpret_cast<std::uint8_t*>(owner.get());
  std::memset(bits, 0xff, bytes);
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (const std::size_t r : pieces[i].columns[j].missing) {
      const std::size_t row = row_base[i] + r;
      bits[row >> 3] &= static_cast<std::uint8_t>(~(1u << (row & 7)));
    }
  return view(owner, owner.get(), bytes);
}

// Moves each piece's rows down to follow the previous piece's (only where a piece held fewer
// records than line breaks: quoted line breaks, blank lines). In piece order: a piece's rows
// may land where the previous piece's slots were.
void close_gaps(const std::vector<Piece>& pieces, Layout& layout, const std::vector<std::size_t>& row_base) {
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (row_base[i] == layout.first_slot[i] || pieces[i].rows == 0) continue;
    for (std::size_t j = 0; j < layout.arrays.size(); ++j) {
      const std::size_t w = layout.widths[j];
      std::byte* rows = layout.arrays[j].get() + w;
      std::memmove(rows + row_base[i] * w, rows + layout.first_slot[i] * w, pieces[i].rows * w);
    }
  }
}

// A string column: end offsets shifted by each piece's place in the joined bytes.
Column join_strings(const std::vector<Piece>& pieces, const Layout& layout, std::size_t j,
                    const std::vector<std::size_t>& row_base, int threads) {
  std::vector<std::size_t> byte_base(pieces.size() + 1, 0);
  for (std::size_t i = 0; i < pieces.size(); ++i) byte_base[i + 1] = byte_base[i] + pieces[i].columns[j].bytes.size();
  auto bytes = tandem::detail::raw_bytes(byte_base.back());
  auto* offsets = reinterpret_cast<std::uint64_t*>(layout.arrays[j].get());
  offsets[0] = 0;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (threads > 1)
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const ByteStore& b = pieces[i].columns[j].bytes;
    if (b.size()) std::memcpy(bytes.get() + byte_base[i], b.data(), b.size());
    std::uint64_t* ends = offsets + 1 + row_base[i];
    for (std::size_t k = 0; k < pieces[i].rows; ++k) ends[k] += byte_base[i];
  }
  const std::size_t rows = row_base.back();
  Column c;
  c.type = ColumnType::str;
  c.length = rows;
  c.values = view(bytes, bytes.get(), byte_base.back());
  c.offsets = view(layout.arrays[j], layout.arrays[j].get(), (rows + 1) * 8);
  return c;
}

}  // namespace

Layout lay_out(const std::vector<const char*>& cuts, const std::vector<ColumnStart>& starts, int threads) {
  Layout l;
  const std::size_t n = cuts.size() - 1;
  l.spans.resize(n);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t i = 0; i < n; ++i) {
    l.spans[i].begin = cuts[i];
    l.spans[i].end = cuts[i + 1];
    // Each record ends in a line break inside its piece, but for a last line with none: it belongs
    // to the last piece (split_records leaves no empty piece but an empty body's).
    const bool at_end = i + 1 == n && cuts[i] < cuts[i + 1];
    l.spans[i].capacity = static_cast<std::size_t>(std::count(cuts[i], cuts[i + 1], '\n')) + at_end;
  }
  l.first_slot.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) l.first_slot[i + 1] = l.first_slot[i] + l.spans[i].capacity;
  for (const auto& s : starts) {
    l.widths.push_back(slot_width(s));
    l.arrays.push_back(tandem::detail::raw_bytes((l.first_slot[n] + 1) * l.widths.back()));
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < starts.size(); ++j)
      l.spans[i].slots.push_back(l.arrays[j].get() + (1 + l.first_slot[i]) * l.widths[j]);
  return l;
}

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

std::vector<Column> assemble(std::vector<Piece>& pieces, Layout& layout, const std::vector<std::string>& names,
                             const std::vector<ColumnType>& types, int threads) {
  std::vector<std::size_t> row_base(pieces.size() + 1, 0);
  for (std::size_t i = 0; i < pieces.size(); ++i) row_base[i + 1] = row_base[i] + pieces[i].rows;
  const std::size_t rows = row_base.back();
  close_gaps(pieces, layout, row_base);
  std::vector<Column> columns(names.size());
  // Many columns: a thread per column, each joining its pieces alone (a parallel region per
  // column would cost more than the work of a wide, short file); few: threads over the pieces.
  const bool by_column = names.size() >= 4 * static_cast<std::size_t>(std::max(threads, 1));
  parallel_for(names.size(), by_column ? threads : 1, [&](std::size_t j) {
    if (types[j] == ColumnType::str) {
      columns[j] = join_strings(pieces, layout, j, row_base, by_column ? 1 : threads);
    } else {
      columns[j].type = types[j];
      columns[j].length = rows;
      columns[j].values = view(layout.arrays[j], layout.arrays[j].get() + layout.widths[j], rows * layout.widths[j]);
    }
    columns[j].name = names[j];
  });
  parallel_for(names.size(), threads, [&](std::size_t j) { columns[j].validity = validity_of(pieces, j, row_base); });
  return columns;
}

}  // namespace tandem::csv
