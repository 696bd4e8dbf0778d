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

namespace tandem::csv {

// The number of quote bytes in [b, e).
std::size_t count_quotes(const char* b, const char* e);

// The start of the first record that begins after `from`, given whether `from` lies inside a
// quoted field (the parity of the quotes before it); `end` when none does. Where every quote
// before a byte opens, closes or doubles inside a quoted field, the parity of the quotes before
// it says whether it is quoted; a literal quote in an unquoted field breaks that (the piece
// parser notes one, and the reader then splits again with split_walking).
const char* next_record_start(const char* from, const char* end, bool inside_quotes);

// Splits [b, e) (starting at a record) into pieces of about `piece_bytes` that start at records:
// the returned boundaries run from b to e and increase (no piece is empty but an empty body's
// one). Counts quotes per piece on `threads` threads to know where each piece starts relative
// to quoted fields.
std::vector<const char*> split_records(const char* b, const char* e, std::size_t piece_bytes, int threads);

// The same split found by walking the fields from b on one thread (as the streaming scan cuts
// its chunks): exact whatever quotes the file holds.
std::vector<const char*> split_walking(const char* b, const char* e, std::size_t piece_bytes, char delimiter);

// ',' or '\t': whichever the first record (the header) has more of outside quotes; ',' on a tie.
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
