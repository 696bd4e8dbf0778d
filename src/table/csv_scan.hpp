// Record boundaries for the parallel piece parser (quote parity, with a field walk where parity
// cannot be trusted), delimiter detection and the text helpers of messages.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "table/csv_dialect.hpp"
#include "tandem/table/csv.hpp"

namespace tandem::csv {

// The quote bytes in [b, e), a part of the text [text, end): how many, and whether one of them
// cannot be structural: neither its neighbour before (a delimiter, a line feed, a quote or the
// text's start) lets it open a field nor its neighbour after (a delimiter, a line end, a quote or
// the text's end) lets it close one. Such a quote is a literal byte (or the text is malformed).
struct QuoteCount {
  std::size_t quotes{0};
  bool literal{false};
};
QuoteCount count_quotes(const char* b, const char* e, const char* text, const char* end, char delimiter);

// The start of the first record that begins after `from`, given whether `from` lies inside a
// quoted field (the parity of the quotes before it); `end` when none does. Where every quote
// before a byte opens, closes or doubles inside a quoted field, the parity of the quotes before
// it says whether it is quoted; a literal quote in an unquoted field breaks that (the piece
// parser notes one, and the reader then splits again with split_walking).
const char* next_record_start(const char* from, const char* end, bool inside_quotes);

// Splits [b, e) (starting at a record) into pieces of about `piece_bytes` that start at records:
// the returned boundaries run from b to e and increase (no piece is empty but an empty body's
// one). Counts quotes per piece on `threads` threads to know where each piece starts relative
// to quoted fields; where a quote is plainly literal, splits with split_walking instead.
struct Split {
  std::vector<const char*> starts;
  bool walked{false};  // split by split_walking: exact, whatever the pieces' parsers find
};
Split split_records(const char* b, const char* e, std::size_t piece_bytes, int threads, char delimiter);

// The same split found by walking from b to e on one thread, quote by quote under the dialect's
// rules (a quote opens quoting only at a field's start): exact whatever quotes the file holds,
// at about memchr's speed.
std::vector<const char*> split_walking(const char* b, const char* e, std::size_t piece_bytes, char delimiter);

// Walks [b, e) from quote to quote (memchr): outside quotes a quote opens a field only at a
// field's start, else it is a literal byte; inside, a quote closes the field unless doubled.
// outside(p, q) sees each stretch [p, q) outside quotes, the last one ending at e, and returns
// false to stop the walk. A quoted field that never ends ends the walk (the parser names it); a
// malformed byte after a closing quote is walked on as unquoted. `start` is the state at b (a
// record start: outside) and `before` the byte before b (a line feed at a record start); the
// state at e is returned (outside when the walk was stopped), for ranges walked one by one.
template <class F>
CsvQuoteState walk_outside_quotes(const char* b, const char* e, char delimiter, F&& outside,
                                  CsvQuoteState start = CsvQuoteState::outside, char before = '\n') {
  const char* p = b;
  if (start == CsvQuoteState::closing) {  // the quote before b closes the field unless b doubles it
    if (p == e) return start;
    start = *p == '"' ? CsvQuoteState::inside : CsvQuoteState::outside;
    if (*p == '"') ++p;
  }
  bool inside = start == CsvQuoteState::inside;
  while (p < e) {
    const void* found = std::memchr(p, '"', static_cast<std::size_t>(e - p));
    const char* q = found ? static_cast<const char*>(found) : e;
    if (inside) {
      if (q == e) return CsvQuoteState::inside;
      if (q + 1 == e) return CsvQuoteState::closing;
      inside = q[1] == '"';
      p = q + (inside ? 2 : 1);
      continue;
    }
    if (!outside(p, q) || q == e) return CsvQuoteState::outside;
    const char prev = q == b ? before : q[-1];
    inside = prev == delimiter || prev == '\n';
    p = q + 1;
  }
  return inside ? CsvQuoteState::inside : CsvQuoteState::outside;
}

// ',' or '\t': whichever the first record (the header) has more of outside quoted fields (a quote
// opens one only at a field's start, as the dialect reads it); ',' on a tie.
char detect_delimiter(const char* b, const char* e);

// A value for an error message: at most about `limit` bytes; control bytes and bytes that are
// not UTF-8 as \xNN.
std::string printable(const char* b, const char* e, std::size_t limit = 40);

// A column name for a message, printable (a NUL in it would end the message there).
inline std::string shown_name(std::string_view name) { return printable(name.data(), name.data() + name.size(), 200); }

// Column names for a message: the first 32, printable, then "and N more" (a table of a million
// columns gets a message, not megabytes); "none" when there are none. `name_of(i)`: the i-th name.
template <class NameOf>
std::string listed_names(std::size_t count, NameOf&& name_of) {
  constexpr std::size_t kShown = 32;
  std::string names;
  for (std::size_t i = 0; i < count && i < kShown; ++i) names += (names.empty() ? "" : ", ") + shown_name(name_of(i));
  if (count > kShown) names += " and " + std::to_string(count - kShown) + " more";
  return names.empty() ? "none" : names;
}
inline std::string listed_names(const std::vector<std::string>& names) {
  return listed_names(names.size(), [&](std::size_t i) -> std::string_view { return names[i]; });
}

// The length of the UTF-8 sequence at p (p < e), 0 when it is not valid UTF-8.
std::size_t utf8_length(const char* p, const char* e);
bool valid_utf8(std::string_view s);

}  // namespace tandem::csv
