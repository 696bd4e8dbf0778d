// RFC 4180 fields and record boundaries: the tokenizer that the header reader and the parallel
// piece parser share, and the quote-parity rules that let pieces start at a record boundary.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::csv {

// How a field ended. The first three are normal; the rest are malformed input.
enum class Stop : std::uint8_t {
  delimiter,    // p is after the delimiter: another field of the record follows
  line_end,     // p is after LF or CRLF
  data_end,     // p is at the end of the data
  stray_quote,  // p is at a quote inside an unquoted field
  after_quote,  // p is at the byte after a closing quote that is no delimiter or line end
  lone_cr,      // p is at a CR not followed by LF
  unterminated  // p is at the opening quote of a field that never closes
};

inline bool is_error(Stop s) { return s > Stop::data_end; }

// A field's bytes: between the quotes for a quoted field. `escaped`: it holds doubled quotes
// ("") that stand for one quote each.
struct Field {
  const char* begin{nullptr};
  const char* end{nullptr};
  bool quoted{false};
  bool escaped{false};
  std::size_t size() const { return static_cast<std::size_t>(end - begin); }
  bool empty() const { return begin == end; }
};

class Scanner {
 public:
  explicit Scanner(char delimiter) : delimiter_(delimiter) {
    special_.fill(false);
    for (char c : {delimiter, '\n', '\r', '"'}) special_[static_cast<unsigned char>(c)] = true;
  }
  char delimiter() const { return delimiter_; }

  // Reads the field at p (p <= end) into f and leaves p after its terminator, or at the
  // offending byte for an error stop.
  Stop next(const char*& p, const char* end, Field& f) const {
    if (p < end && *p == '"') return quoted(p, end, f);
    f.begin = p;
    f.quoted = f.escaped = false;
    while (p < end && !special_[static_cast<unsigned char>(*p)]) ++p;
    f.end = p;
    return terminator(p, end, Stop::stray_quote);  // the only other special byte is a quote
  }

 private:
  Stop quoted(const char*& p, const char* end, Field& f) const {
    const char* open = p++;
    f.begin = p;
    f.quoted = true;
    f.escaped = false;
    for (;;) {
      const void* q = std::memchr(p, '"', static_cast<std::size_t>(end - p));
      if (!q) {
        p = open;
        return Stop::unterminated;
      }
      p = static_cast<const char*>(q);
      if (p + 1 < end && p[1] == '"') {
        f.escaped = true;
        p += 2;
        continue;
      }
      f.end = p++;
      return terminator(p, end, Stop::after_quote);
    }
  }

  // p is at the byte after a field; `other` is the stop for a byte that may not end a field.
  Stop terminator(const char*& p, const char* end, Stop other) const {
    if (p == end) return Stop::data_end;
    const char c = *p;
    if (c == delimiter_) {
      ++p;
      return Stop::delimiter;
    }
    if (c == '\n') {
      ++p;
      return Stop::line_end;
    }
    if (c == '\r') {
      if (p + 1 < end && p[1] == '\n') {
        p += 2;
        return Stop::line_end;
      }
      return Stop::lone_cr;
    }
    return other;
  }

  char delimiter_;
  std::array<bool, 256> special_{};
};

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

// What an error stop means, for a message; p is where the scanner left off.
std::string describe(Stop s, const char* p);

// The number of quote bytes in [b, e).
std::size_t count_quotes(const char* b, const char* e);

// The start of the first record that begins after `from`, given whether `from` lies inside a
// quoted field (the parity of the quotes before it); `end` when none does. In a well-formed file
// every quote opens, closes or doubles inside a quoted field, so the parity of the quotes before
// a byte says whether it is quoted.
const char* next_record_start(const char* from, const char* end, bool inside_quotes);

// Splits [b, e) (starting at a record) into pieces of about `piece_bytes` that start at records:
// the returned boundaries run from b to e and increase (no piece is empty but an empty body's
// one). Counts quotes per piece on `threads` threads to know where each piece starts relative
// to quoted fields.
std::vector<const char*> split_records(const char* b, const char* e, std::size_t piece_bytes, int threads);

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
