// Reading CSV: the header on one thread, then the body split at record boundaries into pieces
// parsed in parallel (table/csv_piece), their column types reconciled and their columns joined
// (table/csv_assemble).

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "table/csv_assemble.hpp"
#include "table/csv_piece.hpp"
#include "table/csv_scan.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/table/csv.hpp"

namespace tandem {
namespace {

using csv::ParseError;

struct Header {
  std::vector<std::string> names;
  const char* body{nullptr};
  char delimiter{','};
};

class CsvReader {
 public:
  CsvReader(std::string_view text, const CsvOptions& options, std::string_view source)
      : text_(text.data()),
        end_(text.data() + text.size()),
        options_(options),
        source_(source),
        threads_(options.threads > 0 ? options.threads : default_threads()) {}

  Table read();

 private:
  Header read_header() const;
  void check_names(const std::vector<std::string>& names, const std::vector<const char*>& at) const;
  std::vector<csv::ColumnStart> column_starts(const Header& h) const;
  std::size_t piece_bytes(std::size_t body) const;
  std::vector<csv::Piece> parse_pieces(const csv::Layout& layout, const csv::PieceInput& in,
                                       const std::vector<csv::ColumnStart>& starts) const;
  void throw_first_error(const std::vector<csv::Piece>& pieces, const std::vector<csv::PieceSpan>& spans,
                         const std::vector<std::string>& names) const;
  [[noreturn]] void raise(const ParseError& e, const std::vector<std::string>& names) const;
  std::size_t line_of(std::size_t pos) const {
    return 1 + static_cast<std::size_t>(std::count(text_, text_ + std::min<std::size_t>(pos, end_ - text_), '\n'));
  }

  const char* text_;
  const char* end_;
  const CsvOptions& options_;
  std::string source_;
  int threads_;
  std::size_t body_at_{~std::size_t{0}};  // where the rows start (known once the header is read)
};

Header CsvReader::read_header() const {
  const char* p = text_;
  if (end_ - p >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;  // UTF-8 byte order mark
  if (p == end_) throw InputError(fmt::format("{}: empty file (expected a header row naming the columns)", source_));
  Header h;
  h.delimiter = options_.delimiter ? options_.delimiter : csv::detect_delimiter(p, end_);
  if (h.delimiter == '"' || h.delimiter == '\n' || h.delimiter == '\r')
    throw UsageError(fmt::format("CSV delimiter '{}' (expected a byte other than a quote, CR or LF)",
                                 csv::printable(&h.delimiter, &h.delimiter + 1)));
  std::vector<const char*> at;
  csv::Field f;
  for (csv::Stop s = csv::Stop::delimiter; s == csv::Stop::delimiter;) {
    at.push_back(p);
    s = csv::read_field(p, end_, h.delimiter, f);
    if (csv::is_error(s)) raise({static_cast<std::size_t>(p - text_), at.size(), csv::describe(s, p)}, {});
    std::string name;
    csv::append_value(f, name);
    h.names.push_back(std::move(name));
  }
  check_names(h.names, at);
  h.body = p;
  return h;
}

void CsvReader::check_names(const std::vector<std::string>& names, const std::vector<const char*>& at) const {
  std::unordered_map<std::string_view, std::size_t> seen;
  for (std::size_t j = 0; j < names.size(); ++j) {
    const ParseError e{static_cast<std::size_t>(at[j] - text_), j + 1, ""};
    if (names[j].empty()) raise({e.pos, e.column, "the header gives this column no name"}, {});
    if (!csv::valid_utf8(names[j]))
      raise({e.pos, e.column,
             fmt::format("the column name '{}' is not UTF-8",
                         csv::printable(names[j].data(), names[j].data() + names[j].size()))},
            {});
    const auto [it, fresh] = seen.emplace(names[j], j);
    if (!fresh)
      raise({e.pos, e.column,
             fmt::format("the header names column {} '{}' again", it->second + 1,
                         csv::printable(names[j].data(), names[j].data() + names[j].size()))},
            {});
  }
}

std::vector<csv::ColumnStart> CsvReader::column_starts(const Header& h) const {
  std::vector<csv::ColumnStart> starts(h.names.size());
  if (options_.schema.empty()) return starts;
  std::unordered_map<std::string_view, std::size_t> column_of;  // linear in the columns, not quadratic
  for (std::size_t j = 0; j < h.names.size(); ++j) column_of.emplace(h.names[j], j);
  for (const auto& s : options_.schema) {
    const auto it = column_of.find(s.name);
    if (it == column_of.end()) {
      throw UsageError(fmt::format("{}: the schema names column '{}', which the header lacks (columns: {})", source_,
                                   csv::shown_name(s.name), csv::listed_names(h.names)));
    }
    auto& start = starts[it->second];
    if (start.fixed) throw UsageError(fmt::format("the schema names column '{}' twice", s.name));
    start = {s.type, true};
  }
  return starts;
}

std::size_t CsvReader::piece_bytes(std::size_t body) const {
  if (options_.chunk_bytes) return options_.chunk_bytes;
  // About eight pieces per thread so a slow thread delays little; pieces large enough that
  // their fixed costs vanish and small enough that their buffers stay modest.
  const std::size_t target = body / (static_cast<std::size_t>(threads_) * 8);
  return std::clamp<std::size_t>(target, std::size_t{1} << 20, std::size_t{64} << 20);
}

std::vector<csv::Piece> CsvReader::parse_pieces(const csv::Layout& layout, const csv::PieceInput& in,
                                                const std::vector<csv::ColumnStart>& starts) const {
  std::vector<csv::Piece> pieces(layout.spans.size());
  parallel_for(pieces.size(), threads_,
               [&](std::size_t i) { pieces[i] = csv::parse_piece(in, layout.spans[i], starts); });
  return pieces;
}

// Whether the quote-parity split may have put a piece's start off a record boundary: a piece
// before the first error held a literal quote (a quote in an unquoted field), which flips the
// parity of all bytes after it. Up to that piece every start is exact, and so is its own parse.
bool parity_split_failed(const std::vector<csv::Piece>& pieces) {
  for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
    if (pieces[i].literal_quote) return true;
    if (pieces[i].error) return false;
  }
  return false;
}

// The first error in the file is found by the piece that holds it: every piece before it began
// at a true record boundary (quote parity is exact up to the first malformed byte or literal
// quote, and a file with a literal quote was split again by walking its fields).
void CsvReader::throw_first_error(const std::vector<csv::Piece>& pieces, const std::vector<csv::PieceSpan>& spans,
                                  const std::vector<std::string>& names) const {
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].error) raise(*pieces[i].error, names);
    if (pieces[i].stop != spans[i].end) throw Error(fmt::format("{}: CSV piece ended off its boundary", source_));
  }
}

void CsvReader::raise(const ParseError& e, const std::vector<std::string>& names) const {
  // Past the header, the lines the text leaves out of its file count too.
  const std::size_t skipped = e.pos >= body_at_ ? options_.lines_skipped : 0;
  std::string where = fmt::format("{}:{}", source_, line_of(e.pos) + skipped);
  if (e.column > 0 && e.column <= names.size()) {  // printable: a NUL in a name would end the message
    const std::string& n = names[e.column - 1];
    where += fmt::format(": column {} ('{}')", e.column, csv::printable(n.data(), n.data() + n.size()));
  } else if (e.column > 0) where += fmt::format(": column {}", e.column);
  throw InputError(fmt::format("{}: {}", where, e.what));
}

Table CsvReader::read() {
  const Header h = read_header();
  body_at_ = static_cast<std::size_t>(h.body - text_);
  const csv::PieceInput in{text_, end_, h.delimiter, h.names.size()};
  auto starts = column_starts(h);
  const std::size_t piece = piece_bytes(static_cast<std::size_t>(end_ - h.body));
  const csv::Split split = csv::split_records(h.body, end_, piece, threads_, h.delimiter);
  csv::Layout layout = csv::lay_out(split.starts, starts, threads_);
  auto pieces = parse_pieces(layout, in, starts);
  if (!split.walked && parity_split_failed(pieces)) {  // rare: split by walking the text, parse again
    layout = csv::lay_out(csv::split_walking(h.body, end_, piece, h.delimiter), starts, threads_);
    pieces = parse_pieces(layout, in, starts);
  }
  throw_first_error(pieces, layout.spans, h.names);
  const csv::Reconciled r = csv::reconcile_types(pieces, starts);
  if (r.overflow) raise(*r.overflow, h.names);
  std::vector<csv::ColumnStart> settled;
  for (auto t : r.types) settled.push_back({t, true});
  parallel_for(pieces.size(), threads_, [&](std::size_t i) {
    if (r.reparse[i]) pieces[i] = csv::parse_piece(in, layout.spans[i], settled);
  });
  throw_first_error(pieces, layout.spans, h.names);
  return Table(csv::assemble(pieces, layout, h.names, r.types, threads_));
}

}  // namespace

CsvSchema parse_csv_schema(std::string_view text) {
  CsvSchema schema;
  std::unordered_set<std::string> named;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view part = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const auto colon = part.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
      throw UsageError(fmt::format("schema part '{}': expected NAME:TYPE (e.g. v1:i64)", part));
    CsvColumnType c{std::string(part.substr(0, colon)), parse_column_type(part.substr(colon + 1))};
    if (!named.insert(c.name).second) throw UsageError(fmt::format("schema names column '{}' twice", c.name));
    schema.push_back(std::move(c));
  }
  return schema;
}

Table read_csv_text(std::string_view text, const CsvOptions& options, std::string_view source) {
  return CsvReader(text, options, source).read();
}

Table read_csv(const std::string& path, const CsvOptions& options) {
  // Read in pieces, never mapped: a file that shrinks meanwhile ends where it ended (a mapping
  // would raise SIGBUS), and pipes, FIFOs and /proc files, whose size says nothing, read to their end.
  const auto bytes = io::read_bytes(path, options.threads);
  return read_csv_text({bytes.data(), bytes.size()}, options, path == "-" ? "<stdin>" : path);
}

}  // namespace tandem
