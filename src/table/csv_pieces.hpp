// A CSV file read in pieces of about `piece_bytes` of text, each parsed into a table with the
// column types that reading the whole file (read_csv) gives, so that pieces sorted or reduced
// apart agree with the whole: for tables larger than memory.
//
// Each piece is the header and whole records, parsed by read_csv_text (error messages name the
// file and its own line numbers). Types: a schema's are fixed; the others are inferred per piece
// and joined over the pieces seen (i64 -> f64 -> str; a piece whose column holds no value, or only
// quoted empty fields, decides nothing). A piece inferred narrower than the join is parsed again
// with the join's types; a piece that widens a type after earlier pieces were handed out makes
// the reader start again from the file's beginning (`restarted`): the caller drops what it made
// of earlier pieces. Types only widen, so that happens at most a few times per column.
#pragma once
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "tandem/table.hpp"
#include "tandem/table/csv.hpp"

namespace tandem::csv {

// The start of the record after the last line feed outside quotes in [b, e) (b a record start),
// walking quote by quote as split_walking does; b when there is none.
const char* last_record_start(const char* b, const char* e, char delimiter);

class PieceReader {
 public:
  // InputError naming the file when it cannot be opened or is empty.
  PieceReader(std::string path, CsvOptions options, std::size_t piece_bytes);
  ~PieceReader();
  PieceReader(const PieceReader&) = delete;
  PieceReader& operator=(const PieceReader&) = delete;

  // The next piece (at least one, with no rows for a header-only file); nullopt at the end.
  // `records`, when given, gets the piece's text (its records as written, without the header).
  std::optional<Table> next(bool& restarted, std::string* records = nullptr);
  // The header's bytes as read (a BOM and the line end included).
  std::string header_text() const { return text_.substr(0, header_bytes_); }
  char delimiter() const { return delimiter_; }
  std::size_t passes() const { return passes_; }  // 1 + restarts

 private:
  void find_piece_end();        // sets piece_end_ after the last whole record of about piece_bytes_
  bool fill(std::size_t want);  // appends up to `want` file bytes to text_; false at the end
  void rewind();
  Table parse(const CsvSchema& schema) const;
  // The types every column takes after `t` joined the knowledge so far.
  std::vector<ColumnType> join_types(const Table& t);

  std::string path_;
  CsvOptions options_;
  std::size_t piece_bytes_;
  std::FILE* file_{nullptr};
  std::string text_;  // the header, then the bytes read after it
  std::size_t header_bytes_{0};
  std::size_t piece_end_{0};     // in text_: the end of the piece being parsed
  std::size_t lines_before_{0};  // body lines before the piece
  bool at_end_{false}, done_{false}, handed_out_any_{false};
  std::size_t passes_{1};
  char delimiter_{','};
  std::vector<std::optional<ColumnType>> known_;  // joined types of the pieces that decided
  std::vector<bool> saw_empty_;                   // some piece held a quoted empty field only
  std::vector<ColumnType> used_;                  // the types of the pieces handed out
};

}  // namespace tandem::csv
