#include "table/csv_scan.hpp"
#include "tandem/table/csv.hpp"

#include <cstring>

#include <algorithm>

#include <fmt/format.h>

namespace tandem::csv {

QuoteCount count_quotes(const char* b, const char* e, const char* text, const char* end, char delimiter) {
  QuoteCount n;
  while (b < e) {
    const void* found = std::memchr(b, '"', static_cast<std::size_t>(e - b));
    if (!found) break;
    const char* q = static_cast<const char*>(found);
    ++n.quotes;
    const bool opens = q == text || q[-1] == delimiter || q[-1] == '\n' || q[-1] == '"';
    const bool closes = q + 1 == end || q[1] == delimiter || q[1] == '\n' || q[1] == '\r' || q[1] == '"';
    n.literal = n.literal || (!opens && !closes);
    b = q + 1;
  }
  return n;
}

const char* next_record_start(const char* from, const char* end, bool inside_quotes) {
  for (const char* p = from; p < end; ++p) {
    if (*p == '"') inside_quotes = !inside_quotes;
    else if (*p == '\n' && !inside_quotes) return p + 1;
  }
  return end;
}

Split split_records(const char* b, const char* e, std::size_t piece_bytes, int threads, char delimiter) {
  const auto bytes = static_cast<std::size_t>(e - b);
  piece_bytes = std::max<std::size_t>(piece_bytes, 1);
  const std::size_t pieces = std::max<std::size_t>(1, (bytes + piece_bytes - 1) / piece_bytes);
  std::vector<QuoteCount> quotes(pieces);
  auto cut = [&](std::size_t i) { return b + std::min(bytes, i * piece_bytes); };
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t i = 0; i < pieces; ++i) quotes[i] = count_quotes(cut(i), cut(i + 1), b, e, delimiter);
  if (pieces > 1 && std::any_of(quotes.begin(), quotes.end(), [](const QuoteCount& q) { return q.literal; }))
    return {split_walking(b, e, piece_bytes, delimiter), true};
  std::vector<bool> inside(pieces, false);  // is cut(i) inside a quoted field?
  for (std::size_t i = 1; i < pieces; ++i) inside[i] = inside[i - 1] != (quotes[i - 1].quotes % 2 == 1);
  std::vector<const char*> starts(pieces + 1, e);
  starts[0] = b;
  // Each thread takes a run of consecutive cuts: a cut that falls before the record start found
  // for the previous one shares it, so a long record is scanned once, not once per cut in it.
  const std::size_t runs = std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)), pieces);
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (std::size_t r = 0; r < runs; ++r) {
    const char* found = nullptr;
    for (std::size_t i = std::max<std::size_t>(1, pieces * r / runs); i < pieces * (r + 1) / runs; ++i)
      starts[i] = found = found && found > cut(i) ? found : next_record_start(cut(i), e, inside[i]);
  }
  // Cuts inside one long record all move to its end: keep one, so that no piece is empty (an
  // empty piece would still hold a parser state per column, and a wide file cut finely holds
  // millions of them).
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  if (starts.size() == 1) starts.push_back(e);  // an empty body: one empty piece
  return {std::move(starts), false};
}

std::vector<const char*> split_walking(const char* b, const char* e, std::size_t piece_bytes, char delimiter) {
  piece_bytes = std::max<std::size_t>(piece_bytes, 1);
  std::vector<const char*> starts{b};
  auto next_cut = [&] {
    return static_cast<std::size_t>(e - starts.back()) > piece_bytes ? starts.back() + piece_bytes : e;
  };
  const char* cut = next_cut();
  // Record starts are the line feeds outside quotes; every piece before a malformed byte is cut
  // exactly (the parser names the byte).
  walk_outside_quotes(b, e, delimiter, [&](const char* p, const char* q) {
    while (cut < q) {  // the cut lies in this stretch outside quotes: the first record start after it
      const char* from = std::max(p, cut);
      const void* nl = std::memchr(from, '\n', static_cast<std::size_t>(q - from));
      if (!nl) break;
      starts.push_back(static_cast<const char*>(nl) + 1);
      cut = next_cut();
    }
    return true;
  });
  if (starts.back() != e || starts.size() == 1) starts.push_back(e);
  return starts;
}

char detect_delimiter(const char* b, const char* e) {
  // The dialect's quoting: only a quote that opens a field starts a quoted field (a quote
  // elsewhere is a literal byte), and "" inside one is an escaped quote. Either candidate
  // delimiter may end a field.
  std::size_t commas = 0, tabs = 0;
  bool inside = false, field_start = true;
  for (const char* p = b; p < e; ++p) {
    if (inside) {
      if (*p != '"') continue;
      if (p + 1 < e && p[1] == '"') ++p;
      else inside = false;
      continue;
    }
    const bool opens = *p == '"' && field_start;
    field_start = *p == ',' || *p == '\t';
    if (opens) inside = true;
    else if (*p == '\n') break;
    else if (*p == ',') ++commas;
    else if (*p == '\t') ++tabs;
  }
  return tabs > commas ? '\t' : ',';
}

std::size_t utf8_length(const char* p, const char* e) {
  const auto c = static_cast<unsigned char>(*p);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned min = 0;
  if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000;
  else return 0;
  if (e - p < static_cast<std::ptrdiff_t>(n)) return 0;
  unsigned cp = c & (0x7f >> n);
  for (std::size_t i = 1; i < n; ++i) {
    const auto d = static_cast<unsigned char>(p[i]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  const bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
  return cp < min || cp > 0x10ffff || surrogate ? 0 : n;
}

bool valid_utf8(std::string_view s) {
  for (const char* p = s.data(); p < s.data() + s.size();) {
    const std::size_t n = utf8_length(p, s.data() + s.size());
    if (n == 0) return false;
    p += n;
  }
  return true;
}

std::string printable(const char* b, const char* e, std::size_t limit) {
  std::string out;
  for (const char* p = b; p < e;) {
    if (static_cast<std::size_t>(p - b) >= limit) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(*p);
    const std::size_t n = utf8_length(p, e);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f || n == 0) out += fmt::format("\\x{:02x}", c);
    else out.append(p, n);
    p += n == 0 ? 1 : n;
  }
  return out;
}

}  // namespace tandem::csv

namespace tandem {

char detect_csv_delimiter(std::string_view text) {
  return csv::detect_delimiter(text.data(), text.data() + text.size());
}

std::array<CsvQuoteState, 3> csv_quote_transitions(std::string_view range, char before, char delimiter) {
  std::array<CsvQuoteState, 3> after{};
  for (const auto s : {CsvQuoteState::outside, CsvQuoteState::inside, CsvQuoteState::closing})
    after[static_cast<std::size_t>(s)] = csv::walk_outside_quotes(
        range.data(), range.data() + range.size(), delimiter, [](const char*, const char*) { return true; }, s, before);
  return after;
}

std::size_t csv_first_record_start(std::string_view range, char before, char delimiter, CsvQuoteState start) {
  std::size_t found = range.size() + 1;
  csv::walk_outside_quotes(
      range.data(), range.data() + range.size(), delimiter,
      [&](const char* p, const char* q) {
        const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(q - p));
        if (nl) found = static_cast<std::size_t>(static_cast<const char*>(nl) - range.data()) + 1;
        return nl == nullptr;
      },
      start, before);
  return found;
}

}  // namespace tandem
