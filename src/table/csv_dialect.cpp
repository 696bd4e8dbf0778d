#include "table/csv_dialect.hpp"

#include <fmt/format.h>

#include "table/csv_scan.hpp"

namespace tandem::csv {
namespace {

Stop terminator(const char*& p, const char* end, char delimiter) {
  if (p == end) return Stop::data_end;
  if (*p == delimiter) {
    ++p;
    return Stop::delimiter;
  }
  if (*p == '\n') {
    ++p;
    return Stop::line_end;
  }
  if (*p == '\r') {
    if (p + 1 < end && p[1] == '\n') {
      p += 2;
      return Stop::line_end;
    }
    return Stop::lone_cr;
  }
  return Stop::after_quote;
}

Stop read_quoted(const char*& p, const char* end, char delimiter, Field& f) {
  const char* open = p++;
  f.begin = p;
  f.quoted = true;
  f.escaped = f.literal_quote = false;
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
    return terminator(p, end, delimiter);
  }
}

}  // namespace

Stop read_field(const char*& p, const char* end, char delimiter, Field& f) {
  if (p < end && *p == '"') return read_quoted(p, end, delimiter, f);
  f.begin = p;
  f.quoted = f.escaped = false;
  bool quote = false;  // a quote here is a literal byte
  for (char c; p < end && (c = *p) != delimiter && c != '\n' && c != '\r'; ++p) quote |= c == '"';
  f.end = p;
  f.literal_quote = quote;
  return terminator(p, end, delimiter);
}

std::string describe(Stop s, const char* p) {
  switch (s) {
    case Stop::after_quote:
      return fmt::format("'{}' after a closing quote (a quote inside a quoted field must be doubled)",
                         printable(p, p + 1));
    case Stop::lone_cr: return "a carriage return not followed by a line feed";
    case Stop::unterminated: return "a quoted field that never ends (its opening quote has no closing quote)";
    default: return "?";
  }
}

const char* last_record_end(const char* b, const char* e, char delimiter) {
  if (!std::memchr(b, '"', static_cast<std::size_t>(e - b))) {
    const void* nl = ::memrchr(b, '\n', static_cast<std::size_t>(e - b));
    return nl ? static_cast<const char*>(nl) + 1 : b;
  }
  // Walk the fields; a malformed field ends where read_field stops and the walk goes on after
  // it (the parser reports the error), so the cut is never inside a well-formed quoted field.
  const char* last = b;
  const char* p = b;
  Field f;
  while (p < e) {
    const Stop s = read_field(p, e, delimiter, f);
    if (s == Stop::line_end) last = p;
    else if (s == Stop::unterminated) break;
    else if (s == Stop::after_quote || s == Stop::lone_cr) ++p;
  }
  return last;
}

Cut cut_piece(const char* buffer, std::size_t filled, bool at_input_end, char delimiter) {
  if (at_input_end) return {filled, 0, false};
  const auto take = static_cast<std::size_t>(last_record_end(buffer, buffer + filled, delimiter) - buffer);
  if (take == 0) return {0, filled, true};
  return {take, filled - take, false};
}

}  // namespace tandem::csv
