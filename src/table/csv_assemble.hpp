// After the pieces are parsed: one type per column from every piece's evidence, then the
// pieces' column parts joined into whole columns.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "table/csv_piece.hpp"
#include "tandem/table.hpp"

namespace tandem::csv {

struct Reconciled {
  std::vector<ColumnType> types;       // one per column
  std::vector<bool> reparse;           // one per piece: parse again with `types` fixed
  std::optional<ParseError> overflow;  // an integer column holds an integer beyond i64
};

// An inferred column is str if any piece found a non-number (or no piece found a value), else
// f64 if any piece found a number that is no integer, else i64; integers beyond i64 in a column
// of integers are an error. Pieces whose parts can be converted are converted in place (no value
// yet -> any type, i64 -> f64); a piece that read numbers where another found strings is marked
// for parsing again.
Reconciled reconcile_types(std::vector<Piece>& pieces, const std::vector<ColumnStart>& starts);

// The columns of the table, each piece's rows in piece order.
std::vector<Column> assemble(std::vector<Piece>& pieces, const std::vector<std::string>& names,
                             const std::vector<ColumnType>& types, int threads);

}  // namespace tandem::csv
