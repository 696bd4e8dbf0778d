// Around the piece parser: the column arrays laid out before parsing, one type per column from
// every piece's evidence afterwards, and the pieces' rows joined into the table's columns.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "table/csv_piece.hpp"
#include "tandem/table.hpp"

namespace tandem::csv {

// The table's column arrays and each piece's place in them.
struct Layout {
  std::vector<PieceSpan> spans;
  std::vector<std::shared_ptr<std::byte>> arrays;  // per column: one slot before the first row
  std::vector<std::size_t> widths;                 // per column: bytes per slot
  std::vector<std::size_t> first_slot;             // per piece, and the total at the end
};

// Spans over the record boundaries `cuts`, each with a slot per line break it holds (the last
// piece one more), and arrays for every column (line breaks counted on `threads` threads).
Layout lay_out(const std::vector<const char*>& cuts, const std::vector<ColumnStart>& starts, int threads);

struct Reconciled {
  std::vector<ColumnType> types;       // one per column
  std::vector<bool> reparse;           // one per piece: parse again with `types` fixed
  std::optional<ParseError> overflow;  // a number column holds an integer beyond i64 or a float beyond f64
};

// An inferred column is str if any piece found a non-number (or only quoted empty fields), else
// f64 if any piece found a number that is no integer, else i64 (no value at all: i64, every value
// missing); integers beyond i64 in a column
// of integers are an error. Pieces whose parts can be converted are converted in place (no value
// yet -> any type, i64 -> f64); a piece that read numbers where another found strings is marked
// for parsing again.
Reconciled reconcile_types(std::vector<Piece>& pieces, const std::vector<ColumnStart>& starts);

// The table's columns: pieces' rows closed up where a piece held fewer records than slots,
// string offsets shifted and bytes joined, validity from the missing rows.
std::vector<Column> assemble(std::vector<Piece>& pieces, Layout& layout, const std::vector<std::string>& names,
                             const std::vector<ColumnType>& types, int threads);

}  // namespace tandem::csv
