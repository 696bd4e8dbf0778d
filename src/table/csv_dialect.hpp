// The CSV dialect both readers follow (the table reader, table/csv_read, and the streaming scan,
// scan/csv_stream), as DuckDB, pandas and Python's csv module read files:
// - a quote opens quoting only at the start of a field; elsewhere in an unquoted field it is a
//   literal byte (37°36'37.8"N). After a closing quote only a delimiter, a line end, the end of
//   the data or a second quote (a doubled quote inside the field) may follow.
// - a value is inferred as a number only when it has no leading zero (08123 stays a string;
//   0, 0.5, -0.5 and 0e3 are numbers); a type the schema names still reads 08123 as 8123.
// - a column with no value at all (a header-only file, every field empty) is inferred as i64,
//   every value missing.
// - a piece of the input may end only after a line feed outside quotes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace tandem::csv {

// How a field ended (the first three are normal; the rest are malformed input).
enum class Stop : std::uint8_t {
  delimiter,    // p is after the delimiter: another field of the record follows
  line_end,     // p is after LF or CRLF
  data_end,     // p is at the end of the data
  after_quote,  // p is at the byte after a closing quote that is no delimiter, line end or quote
  lone_cr,      // p is at a CR not followed by LF
  unterminated  // p is at the opening quote of a field that never closes
};

inline bool is_error(Stop s) { return s > Stop::data_end; }

// A field's bytes: between the quotes for a quoted field. `escaped`: it holds doubled quotes
// ("") that stand for one quote each; `literal_quote`: an unquoted field that holds a quote.
struct Field {
  const char* begin{nullptr};
  const char* end{nullptr};
  bool quoted{false};
  bool escaped{false};
  bool literal_quote{false};
  std::size_t size() const { return static_cast<std::size_t>(end - begin); }
  bool empty() const { return begin == end; }
};

// Reads the field at p (a field start, p <= end) into f and leaves p after its terminator, or at
// the offending byte for an error stop (at the opening quote for an unterminated field).
Stop read_field(const char*& p, const char* end, char delimiter, Field& f);

// What an error stop means, for a message; p is where read_field left off.
std::string describe(Stop s, const char* p);

// Appends a field's value: its bytes with each doubled quote collapsed to one.
template <class Out>
void append_value(const Field& f, Out& out) {
  if (!f.escaped) {
    out.append(f.begin, f.size());
    return;
  }
  for (const char* p = f.begin; p < f.end;) {
    const char* q = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(f.end - p)));
    if (!q) q = f.end;
    out.append(p, static_cast<std::size_t>(q - p));
    if (q == f.end) break;
    out.append(q, 1);
    p = q + 2;  // skip the second quote of the pair
  }
}

// True when a value's text has a leading zero that rules out reading it as a number when its
// type is inferred: a digit after a first '0' (after an optional sign).
inline bool has_leading_zero(std::string_view s) {
  std::size_t i = !s.empty() && (s[0] == '-' || s[0] == '+');
  return s.size() >= i + 2 && s[i] == '0' && static_cast<unsigned>(s[i + 1] - '0') <= 9;
}

// The end of the last whole record in [b, e), which starts at a record start: the byte after
// the last line feed outside quotes under the rules above; b when no record ends in [b, e).
const char* last_record_end(const char* b, const char* e, char delimiter);

// Splitting a stream: given `filled` bytes in a buffer that starts at a record, where the next
// piece ends (`take`) and how many bytes after it are carried into the next buffer. At the end
// of the input everything is taken; otherwise a buffer with no whole record must grow.
struct Cut {
  std::size_t take{0};
  std::size_t carry{0};
  bool grow{false};
};
Cut cut_piece(const char* buffer, std::size_t filled, bool at_input_end, char delimiter);

}  // namespace tandem::csv
