// One piece of a CSV file's body (whole records) parsed into per-piece column storage, with each
// inferred column's type narrowed as its values arrive: undecided -> i64 -> f64 -> str.
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
  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  void grow(std::size_t need);
  std::unique_ptr<char[]> data_;
  std::size_t size_{0}, capacity_{0};
};

struct PieceColumn {
  ColumnType type{ColumnType::str};
  bool decided{false};       // false: an inferred column with no value yet
  bool fixed{false};
  bool saw_fraction{false};  // inferred f64: some value is no integer
  std::size_t overflow_pos{kNone};  // inferred: the first integer beyond i64 (a byte offset)
  std::string overflow_text;
  std::unique_ptr<std::byte[]> values;  // numbers: capacity elements of type's width
  ByteStore bytes;                      // strings
  std::vector<std::uint64_t> offsets;   // strings: rows + 1 offsets into bytes, from 0
  std::vector<std::size_t> missing;     // rows with no value
  std::vector<std::size_t> empties;     // undecided: rows holding a quoted empty field ("")
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
  const Scanner* scanner{nullptr};
  std::size_t columns{0};
};

struct Piece {
  const char* begin{nullptr};
  const char* end{nullptr};
  std::size_t rows{0};
  std::vector<PieceColumn> columns;
  std::optional<ParseError> error;  // the piece's first error; parsing stopped there
  const char* stop{nullptr};        // where parsing stopped: `end` for well-formed input
};

// Parses the records that start in [begin, end) (begin is a record start). A column inferred as a
// number that meets a non-number is restarted as str: the piece is parsed again.
Piece parse_piece(const PieceInput& in, const char* begin, const char* end, std::vector<ColumnStart> starts);

// Gives an inferred column that has seen no value yet the type t for its first `rows` rows (all
// missing, except quoted empty fields in a str column, which are empty strings), with room for
// `capacity` rows (numbers) or `byte_capacity` bytes (strings).
void settle_undecided(PieceColumn& c, ColumnType t, std::size_t rows, std::size_t capacity,
                      std::size_t byte_capacity = 0);

// An i64 column's first `rows` values as f64, in place (as a float column parses them).
void convert_to_f64(PieceColumn& c, std::size_t rows);

// "an i64", "a u32", …: for messages.
std::string with_article(ColumnType t);

}  // namespace tandem::csv
