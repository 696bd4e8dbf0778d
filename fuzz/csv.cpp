// The CSV reader (read_csv_text) and the schema parser (parse_csv_schema).
//
// Each input is read as CSV with the delimiter found from the header, with ',' and with '\t'; each
// of those on one thread in one piece, and again split into tiny pieces on several threads: the
// splits must give the same table or the same error. The reader may only accept or throw an
// InputError (the schemas given here name columns the header has, so a UsageError is a finding).
// An accepted table must come back unchanged from write_csv and a read with every column's type
// in the schema; read again with a schema of other types it must be accepted with those types or
// rejected with an InputError. The input's first line is also parsed as a schema: accepted, or a
// UsageError.
// The streaming scan's chunk parser (src/scan/) reads the same body with the accepted table's
// types fixed: its fast and scalar paths must agree with each other always, and with the table
// where the table reader accepted the text; the body cut into tiny pieces as the scan's reader
// cuts a stream (csv::cut_piece) must give the same rows, and say where each row's record lies.
#include <bit>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>

#include <fmt/format.h>

#include "harness.hpp"
#include "scan/chunk_parser.hpp"
#include "table/csv_dialect.hpp"
#include "table/table_wire.hpp"
#include "tandem/table/csv.hpp"

namespace {

using namespace tandem;

// A table, or the message of the InputError that rejected the text.
using Outcome = std::variant<Table, std::string>;

Outcome read(std::string_view text, const CsvOptions& o, const char* what) {
  try {
    return read_csv_text(text, o, "in.csv");
  } catch (const InputError& e) {
    return std::string(e.what());
  } catch (const std::exception& e) {
    fuzz::fail(
        fmt::format("{}: read_csv_text threw {} instead of an InputError: {}", what, fuzz::type_name(e), e.what()));
  }
}

bool same_number(const Column& a, const Column& b, std::size_t i) {
  return visit_numeric(a.type, [&](auto tag) {
    using T = decltype(tag);
    const T x = a.numbers<T>()[i], y = b.numbers<T>()[i];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return std::signbit(x) == std::signbit(y) && x == y;
    } else {
      return x == y;
    }
  });
}

// Empty when equal, else what differs.
std::string difference(const Table& a, const Table& b) {
  if (a.num_columns() != b.num_columns() || a.rows() != b.rows())
    return fmt::format("{}x{} vs {}x{}", a.rows(), a.num_columns(), b.rows(), b.num_columns());
  for (std::size_t c = 0; c < a.num_columns(); ++c) {
    const Column &x = a.column(c), &y = b.column(c);
    if (x.name != y.name || x.type != y.type)
      return fmt::format("column {}: '{}' {} vs '{}' {}", c, x.name, to_string(x.type), y.name, to_string(y.type));
    for (std::size_t i = 0; i < x.length; ++i) {
      if (x.present(i) != y.present(i)) return fmt::format("column '{}' row {}: missing in one only", x.name, i);
      if (!x.present(i)) continue;
      const bool same = x.type == ColumnType::str ? x.string(i) == y.string(i) : same_number(x, y, i);
      if (!same) return fmt::format("column '{}' row {}: values differ", x.name, i);
    }
  }
  return {};
}

void check_same(const Outcome& want, const Outcome& got, const std::string& what) {
  if (want.index() != got.index())
    fuzz::fail(fmt::format("{}: {} in one piece but {} when split", what,
                           want.index() == 0 ? "accepted" : "rejected (" + std::get<1>(want) + ")",
                           got.index() == 0 ? "accepted" : "rejected (" + std::get<1>(got) + ")"));
  if (want.index() == 1) {
    fuzz::check(std::get<1>(want) == std::get<1>(got),
                fmt::format("{}: another error when split: '{}' vs '{}'", what, std::get<1>(want), std::get<1>(got)));
    return;
  }
  const std::string diff = difference(std::get<0>(want), std::get<0>(got));
  fuzz::check(diff.empty(), fmt::format("{}: another table when split: {}", what, diff));
}

CsvSchema schema_of(const Table& t) {
  CsvSchema s;
  for (const auto& c : t.columns()) s.push_back({c.name, c.type});
  return s;
}

// write_csv, then read_csv_text with every column's type named: the same table.
void check_round_trip(const Table& t, char delimiter) {
  std::ostringstream out;
  try {
    write_csv(out, t, delimiter);
  } catch (const std::exception& e) {
    fuzz::fail(fmt::format("write_csv of an accepted table threw {}: {}", fuzz::type_name(e), e.what()));
  }
  const std::string text = out.str();
  CsvOptions o;
  o.delimiter = delimiter;
  o.schema = schema_of(t);
  o.threads = 1;
  const Outcome back = read(text, o, "reading written CSV back");
  if (back.index() == 1) fuzz::fail("written CSV is rejected when read back: " + std::get<1>(back));
  const std::string diff = difference(t, std::get<0>(back));
  fuzz::check(diff.empty(), "written CSV reads back different: " + diff);
}

// The accepted table's columns given other types (every other column, chosen by `salt`): accepted
// with those types, or an InputError.
void check_other_schema(std::string_view text, const Table& t, char delimiter, std::size_t salt) {
  constexpr ColumnType kTypes[] = {ColumnType::i32, ColumnType::i64, ColumnType::u32, ColumnType::u64,
                                   ColumnType::f32, ColumnType::f64, ColumnType::str};
  CsvOptions o;
  o.delimiter = delimiter;
  o.threads = 2;
  o.chunk_bytes = 3;
  for (std::size_t c = salt % 2; c < t.num_columns(); c += 2)
    o.schema.push_back({t.column(c).name, kTypes[(salt + c) % std::size(kTypes)]});
  const Outcome got = read(text, o, "with a schema");
  if (got.index() == 1) return;
  for (const auto& s : o.schema) {
    const Column* c = std::get<0>(got).find(s.name);
    fuzz::check(c && c->type == s.type,
                fmt::format("column '{}' is not of the schema's type {}", s.name, to_string(s.type)));
  }
}

void check_schema_text(std::string_view line) {
  CsvSchema s;
  try {
    s = parse_csv_schema(line);
  } catch (const UsageError&) {
    return;
  } catch (const std::exception& e) {
    fuzz::fail(fmt::format("parse_csv_schema threw {} instead of a UsageError: {}", fuzz::type_name(e), e.what()));
  }
  std::string again;
  for (const auto& c : s) again += fmt::format("{}{}:{}", again.empty() ? "" : ",", c.name, to_string(c.type));
  CsvSchema back;
  try {
    back = parse_csv_schema(again);
  } catch (const std::exception& e) {
    fuzz::fail(fmt::format("schema '{}' written as '{}' does not parse: {}", line, again, e.what()));
  }
  bool same = back.size() == s.size();
  for (std::size_t i = 0; same && i < s.size(); ++i) same = back[i].name == s[i].name && back[i].type == s[i].type;
  fuzz::check(same, fmt::format("schema '{}' written as '{}' reads back different", line, again));
}

// The body after the header record (BOM skipped), or nothing when the header is not whole.
std::optional<std::string_view> body_of(std::string_view text, char delimiter) {
  const char* p = text.data();
  const char* end = p + text.size();
  if (text.substr(0, 3) == "\xEF\xBB\xBF") p += 3;
  csv::Field f;
  for (csv::Stop s = csv::Stop::delimiter; s == csv::Stop::delimiter;) {
    s = csv::read_field(p, end, delimiter, f);
    if (csv::is_error(s)) return std::nullopt;
  }
  return std::string_view(p, static_cast<std::size_t>(end - p));
}

// Where a chunk says its records lie (the sort's verbatim output rests on it): one record per
// row, in order, each ending in a line feed or at the chunk's end, and nothing between two
// records but blank lines.
void check_records(std::string_view chunk, const scan::ChunkResult& r) {
  fuzz::check(r.record_starts.size() == r.rows && r.record_ends.size() == r.rows,
              fmt::format("{} records for {} rows", r.record_starts.size(), r.rows));
  std::size_t prev = 0;
  for (std::size_t i = 0; i < r.rows; ++i) {
    const std::size_t b = r.record_starts[i], e = r.record_ends[i];
    fuzz::check(prev <= b && b < e && e <= chunk.size(), fmt::format("record {}: [{}, {}) after {}", i, b, e, prev));
    fuzz::check(chunk[e - 1] == '\n' || e == chunk.size(), fmt::format("record {} ends inside a line", i));
    for (std::string_view gap = chunk.substr(prev, b - prev); !gap.empty();) {
      const std::size_t n = gap.starts_with("\r\n") ? 2 : gap.starts_with('\n') ? 1 : 0;
      fuzz::check(n > 0, fmt::format("record {}: bytes other than blank lines before it", i));
      gap.remove_prefix(n);
    }
    prev = e;
  }
}

// Parses `body` as one chunk (fast or scalar path) or as the pieces a stream would be cut into
// with buffers of `buffer` bytes; the table or the error (offset and message).
Outcome scan_body(std::string_view body, char delimiter, const std::vector<scan::ColumnPlan>& plans, bool fast,
                  std::size_t buffer) {
  std::vector<int> slot(plans.size());
  for (std::size_t k = 0; k < plans.size(); ++k) slot[k] = static_cast<int>(k);
  std::vector<Table> parts;
  std::size_t at = 0;
  while (at < body.size() || parts.empty()) {
    std::size_t n = buffer ? std::min(buffer, body.size() - at) : body.size() - at;
    csv::Cut cut;
    for (;;) {
      cut = csv::cut_piece(body.data() + at, n, at + n == body.size(), delimiter);
      if (!cut.grow) break;
      n = std::min(body.size() - at, n * 2);
    }
    std::string chunk(body.substr(at, cut.take));
    chunk.append(64, '\0');
    const scan::ChunkInput in{chunk.data(), chunk.data() + cut.take,     delimiter, plans.size(), &plans,
                              &slot,        scan::detected_simd_level(), true};
    const scan::ChunkResult r = fast ? scan::parse_chunk(in) : scan::parse_chunk_scalar(in);
    if (r.status == scan::ChunkStatus::error) return fmt::format("byte {}: {}", at + r.error_offset, r.error_what);
    fuzz::check(r.status == scan::ChunkStatus::ok, "a fixed-type column widened");
    check_records(std::string_view(chunk).substr(0, cut.take), r);
    parts.push_back(r.table);
    at += cut.take;
    if (cut.take == 0) break;
  }
  return concat_tables(parts, parts.front(), 1);
}

void check_scan(std::string_view text, const Table& t, char delimiter) {
  if (t.num_columns() == 0) return;
  const auto body = body_of(text, delimiter);
  if (!body) return;
  std::vector<scan::ColumnPlan> plans;
  for (std::size_t c = 0; c < t.num_columns(); ++c) plans.push_back({c, t.column(c).name, t.column(c).type, true});
  const Outcome fast = scan_body(*body, delimiter, plans, true, 0);
  check_same(scan_body(*body, delimiter, plans, false, 0), fast, "scan: scalar vs fast path");
  check_same(fast, scan_body(*body, delimiter, plans, true, 7), "scan: whole vs 7-byte buffers");
  if (fast.index() == 1) fuzz::fail("scan rejects what the table reader accepts: " + std::get<1>(fast));
  const std::string diff = difference(t, std::get<0>(fast));
  fuzz::check(diff.empty(), "scan reads another table than the table reader: " + diff);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::size_t salt = 0;
  for (unsigned char b : text) salt = salt * 31 + b;
  for (const char delimiter : {'\0', ',', '\t'}) {
    const std::string what =
        fmt::format("delimiter {}", delimiter == 0 ? "from the header" : fmt::format("{:#x}", +delimiter));
    CsvOptions whole;
    whole.delimiter = delimiter;
    whole.threads = 1;
    const Outcome want = read(text, whole, what.c_str());
    for (const auto& [threads, chunk] : {std::pair{3, std::size_t{1}}, std::pair{2, std::size_t{5}}}) {
      CsvOptions split = whole;
      split.threads = threads;
      split.chunk_bytes = chunk;
      check_same(want, read(text, split, what.c_str()),
                 fmt::format("{}, {} threads, {}-byte pieces", what, threads, chunk));
    }
    if (want.index() == 1) continue;
    const Table& t = std::get<0>(want);
    check_round_trip(t, delimiter == 0 ? ',' : delimiter);
    if (delimiter != 0) check_scan(text, t, delimiter);
    check_other_schema(text, t, delimiter, salt);
  }
  check_schema_text(text.substr(0, text.find('\n')));
  return 0;
}
