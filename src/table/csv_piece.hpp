// One piece of a CSV file's body (whole records) parsed straight into the table's column arrays,
// with each inferred column's type narrowed as its values arrive: undecided -> i64 -> f64 -> str
// (table/csv_dialect says what is inferred when).
//
// Every column has one array of 8-byte slots per row (4 for a schema's 32-bit types), laid out
// before parsing: a piece owns as many slots as it has line breaks (one more for the last piece),
// which bounds its records. A number column keeps its values there; a string column keeps each
// row's end offset into the piece's own bytes, shifted into the table's bytes when joining.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "table/csv_scan.hpp"
#include "tandem/table.hpp"

namespace tandem::csv {

constexpr std::size_t kNone = ~std::size_t{0};

// How a piece starts a column: with a fixed type (the schema's, or one an earlier pass settled:
// values that do not parse are errors) or inferring it from its values.
struct ColumnStart {
  ColumnType type{ColumnType::str};
  bool fixed{false};
};

// Bytes appended without zero-filling first.
class ByteStore {
 public:
  void reserve(std::size_t n);
  void append(const char* p, std::size_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    std::memcpy(data_.get() + size_, p, n);
    size_ += n;
  }
  const std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  void grow(std::size_t need);
  std::shared_ptr<std::byte> data_;
  std::size_t size_{0}, capacity_{0};
};

struct PieceColumn {
  ColumnType type{ColumnType::str};
  bool decided{false};  // false: an inferred column with no value yet
  bool fixed{false};
  bool saw_fraction{false};         // inferred f64: some value is no integer
  std::size_t overflow_pos{kNone};  // inferred: the first integer beyond i64 (a byte offset)
  std::string overflow_text;
  std::size_t huge_pos{kNone};  // inferred: the first float beyond f64's range (kept as ±inf)
  std::string huge_text;
  std::byte* slots{nullptr};                // the piece's rows in the column's array
  ByteStore bytes;                          // strings
  std::vector<std::size_t> missing;         // rows with no value
  std::vector<std::size_t> empties;         // undecided: rows holding a quoted empty field ("")
  std::vector<std::size_t> negative_zeros;  // inferred i64: rows reading "-0", -0.0 as f64
};

struct ParseError {
  std::size_t pos{0};     // byte offset from the start of the text
  std::size_t column{0};  // 1-based; 0 when no column is concerned
  std::string what;
};

struct PieceInput {
  const char* text{nullptr};      // start of the whole text (error positions count from here)
  const char* data_end{nullptr};  // end of the text: a record may run past its piece only here
  char delimiter{','};
  std::size_t columns{0};
};

// Where a piece is and where its rows go.
struct PieceSpan {
  const char* begin{nullptr};  // a record start
  const char* end{nullptr};
  std::size_t capacity{0};        // slots: no more records than this
  std::vector<std::byte*> slots;  // per column: the piece's first slot
};

struct Piece {
  std::size_t rows{0};
  std::vector<PieceColumn> columns;
  std::optional<ParseError> error;  // the piece's first error; parsing stopped there
  const char* stop{nullptr};        // where parsing stopped: the span's end for well-formed input
  bool literal_quote{false};        // an unquoted field held a quote: later pieces' starts, found by
                                    // quote parity, may be off
};

// Parses the records that start in the span. A column inferred as a number that meets a
// non-number is restarted as str: the piece is parsed again.
Piece parse_piece(const PieceInput& in, const PieceSpan& span, std::vector<ColumnStart> starts);

// Bytes per slot of a column that starts so.
inline std::size_t slot_width(const ColumnStart& s) {
  return s.fixed && s.type != ColumnType::str ? value_width(s.type) : 8;
}

// Gives an inferred column that has seen no value yet the type t for its first `rows` rows (all
// missing, except quoted empty fields in a str column, which are empty strings).
void settle_undecided(PieceColumn& c, ColumnType t, std::size_t rows, std::size_t byte_capacity = 0);

// An i64 column's first `rows` values as f64, in place (as a float column parses them).
void convert_to_f64(PieceColumn& c, std::size_t rows);

// "an i64", "a u32", …: for messages.
std::string with_article(ColumnType t);

}  // namespace tandem::csv
