// Tables from and to CSV files (RFC 4180): a header row names the columns, fields may be quoted
// ("a,b", "say ""hi""", line breaks inside quotes), lines end in LF or CRLF.
//
//   auto t = tandem::read_csv("data.csv", {.schema = tandem::parse_csv_schema("id1:str,v1:i64")});
//   tandem::write_csv(std::cout, t);
//
// Reading: the delimiter is ',' or '\t' (whichever the header has more of) unless given. A quote
// opens quoting only at a field's start; inside an unquoted field it is a literal byte
// (37°36'37.8"N), as DuckDB, pandas and Python's csv read it. Columns the schema does not name
// get a type from all of their values: i64 when every value is an integer, f64 when every value
// is a number (with '.', an exponent, inf or nan), otherwise str; a value with a leading zero
// (08123, 00.5) is no number then, so zip codes stay text (0, 0.5, -0.5 are numbers).
// An empty unquoted field is missing; a quoted empty field ("") is an empty string in a str
// column and missing in a number column. A column with no values at all is i64, every value
// missing (one whose only values are "" is str). Blank lines are
// skipped when the header has two or more columns (in a one-column file they are missing values);
// a UTF-8 byte order mark before the header is skipped. Field bytes are kept as they are.
// A malformed file is rejected with an InputError naming the file, line and column (1-based):
//   data.csv:17: column 3 ('v1'): 'abc' is not an i64
// (ragged rows, values that do not parse as the schema's type, integers beyond i64 in an
// integer column, unterminated quotes, a byte after a closing quote, empty or repeated header
// names).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/table.hpp"

namespace tandem {

struct CsvColumnType {
  std::string name;
  ColumnType type{ColumnType::str};
};
using CsvSchema = std::vector<CsvColumnType>;

// "id1:str,v1:i64,v3:f64" (any subset of the columns); UsageError naming the part that does not
// parse or a column named twice.
CsvSchema parse_csv_schema(std::string_view text);

struct CsvOptions {
  char delimiter{0};   // 0: ',' or '\t' from the header (',' when it has neither)
  CsvSchema schema{};  // types of the named columns; the others are inferred
  int threads{0};      // 0: default_threads()
  // Bytes per parallel piece (0: from the file size and threads). Small values split even tiny
  // inputs into many pieces, so tests can exercise piece boundaries.
  std::size_t chunk_bytes{0};
  // Lines of the file left out between the header and the rows in the text (a part of a shared
  // file that one of several readers reads): error messages count them, so that a line number is
  // the file's.
  std::size_t lines_skipped{0};
};

// Reads a CSV file ("-": standard input). InputError for a missing, empty or malformed file;
// UsageError for a bad delimiter or a schema that names a column the header lacks.
Table read_csv(const std::string& path, const CsvOptions& options = {});

// The same from bytes in memory; `source` names them in error messages.
Table read_csv_text(std::string_view text, const CsvOptions& options = {}, std::string_view source = "<text>");

// Writes a header and one line per row. Strings are quoted when they are empty or hold the
// delimiter, a quote, CR or LF, or start or end with a space or tab (quotes doubled inside);
// missing values are empty fields. Floats are printed shortest round-trip ("0.1", "1e+20"),
// -0.0 as "-0", NaN as "nan", infinities as "inf" and "-inf". A float with an integral value
// prints without a point ("3"), so reading it back infers i64 unless the schema names the type:
// with every column's type in the schema, read_csv gives back the written table exactly.
// The delimiter may be any byte but a quote, CR or LF (UsageError).
void write_csv(std::ostream& out, const Table& table, char delimiter = ',');
// The rows alone, as write_csv writes them (no header): a table written in batches.
void write_csv_rows(std::ostream& out, const Table& table, char delimiter = ',');

// Splitting one CSV file between processes that each read a byte range: where quoted fields
// stand at the end of a range for each state at its start, under the readers' dialect (a quote
// opens a field only at a field's start, "" inside one is a quote, a quote elsewhere a literal
// byte). A range's real start state is then its predecessors' transitions applied in order from
// `outside` at the file's start; no quote parity, which a literal quote would break.
enum class CsvQuoteState : std::uint8_t {
  outside,
  inside,
  closing  // inside, and the range ended on a quote: a quote next doubles it, anything else closes
};
// ',' or '\t', as the readers pick a delimiter that is not given: the one the first record of
// `text` has more of outside quoted fields.
char detect_csv_delimiter(std::string_view text);
// The end state for each start state (indexed by the start's value). `before`: the byte before
// the range ('\n' at the file's start), which says whether a quote at its first byte opens a field.
std::array<CsvQuoteState, 3> csv_quote_transitions(std::string_view range, char before, char delimiter);
// The offset just after the first line feed outside quotes in `range` when it starts in `start`;
// range.size() + 1 when it has none.
std::size_t csv_first_record_start(std::string_view range, char before, char delimiter, CsvQuoteState start);

}  // namespace tandem
