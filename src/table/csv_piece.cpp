#include "table/csv_piece.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include <fmt/format.h>

#include "table/csv_values.hpp"
#include "table/raw_bytes.hpp"

namespace tandem::csv {

void ByteStore::reserve(std::size_t n) {
  if (n > capacity_) grow(n);
}

void ByteStore::grow(std::size_t need) {
  const std::size_t cap = std::max({need, capacity_ * 2, std::size_t{64}});
  auto bigger = tandem::detail::raw_bytes(cap);
  if (size_) std::memcpy(bigger.get(), data_.get(), size_);
  data_ = std::move(bigger);
  capacity_ = cap;
}

std::string with_article(ColumnType t) {
  const auto name = to_string(t);
  const bool vowel_sound = name[0] == 'i' || name[0] == 'f';  // "an i64", "an f64", "a u32", "a str"
  return fmt::format("{} {}", vowel_sound ? "an" : "a", name);
}

namespace {

enum class Outcome : std::uint8_t { ok, restart, error };

constexpr double kNegativeZero = -0.0;

template <class T>
void put(PieceColumn& c, std::size_t row, T v) {
  std::memcpy(c.slots + row * sizeof(T), &v, sizeof(T));
}

// Parses the records of one piece once; run() says which column, if any, must restart as str.
class PieceParser {
 public:
  PieceParser(const PieceInput& in, const PieceSpan& span, Piece& piece, const std::vector<ColumnStart>& starts)
      : in_(in), span_(span), piece_(piece) {
    piece_.columns.resize(starts.size());
    for (std::size_t j = 0; j < starts.size(); ++j) {
      PieceColumn& c = piece_.columns[j];
      c.fixed = c.decided = starts[j].fixed;
      c.type = starts[j].type;
      c.slots = span.slots[j];
      if (c.fixed && c.type == ColumnType::str) c.bytes.reserve(byte_guess());
    }
  }

  std::size_t run();

 private:
  // Room for a string column's bytes: all string columns together hold fewer bytes than the
  // piece, so four times a fair share (at most the piece) rarely grows; pages never written are
  // never touched.
  std::size_t byte_guess() const {
    const auto bytes = static_cast<std::size_t>(span_.end - span_.begin);
    return std::min(bytes, bytes / in_.columns * 4 + 4096);
  }

  Outcome store(std::size_t j, const Field& f, const char* at) {
    PieceColumn& c = piece_.columns[j];
    if (c.decided && c.type == ColumnType::str) {
      if (f.empty() && !f.quoted) c.missing.push_back(row_);
      append_value(f, c.bytes);
      put<std::uint64_t>(c, row_, c.bytes.size());
      return Outcome::ok;
    }
    if (f.empty()) return store_empty(c, f.quoted);
    if (!c.decided) return decide(c, f, at);
    if (c.fixed) return store_fixed(j, c, f, at);
    return c.type == ColumnType::i64 ? store_i64(c, f, at) : store_f64(c, f, at);
  }

  Outcome store_empty(PieceColumn& c, bool quoted) {
    if (!c.decided) {
      (quoted ? c.empties : c.missing).push_back(row_);
      return Outcome::ok;
    }
    const std::size_t w = value_width(c.type);
    std::memset(c.slots + row_ * w, 0, w);
    c.missing.push_back(row_);
    return Outcome::ok;
  }

  bool fast_number(PieceColumn& c, const char*& p, Stop& s);
  bool terminated(const char*& q, Stop& s) const;
  Outcome decide(PieceColumn& c, const Field& f, const char* at);
  Outcome store_i64(PieceColumn& c, const Field& f, const char* at);
  Outcome store_f64(PieceColumn& c, const Field& f, const char* at);
  Outcome store_fixed(std::size_t j, PieceColumn& c, const Field& f, const char* at);
  Outcome end_of_row(Stop s, std::size_t j, const char* p);
  void put_integer(PieceColumn& c, std::int64_t i, const Field& f) {
    put(c, row_, i);
    if (i == 0 && *f.begin == '-') c.negative_zeros.push_back(row_);  // stays -0.0 should c become f64
  }
  void note_overflow(PieceColumn& c, const Field& f, const char* at);
  double note_huge(PieceColumn& c, const Field& f, const char* at);
  void fail(const char* at, std::size_t column, std::string what) {
    piece_.error = ParseError{static_cast<std::size_t>(at - in_.text), column, std::move(what)};
  }

  const PieceInput& in_;
  const PieceSpan& span_;
  Piece& piece_;
  std::size_t row_{0};
};

std::size_t PieceParser::run() {
  const std::size_t ncols = in_.columns;
  const bool skip_blank = ncols >= 2;
  const char* p = span_.begin;
  Field f;
  while (p < span_.end) {
    if (skip_blank && (*p == '\n' || (*p == '\r' && p + 1 < in_.data_end && p[1] == '\n'))) {
      p += *p == '\n' ? 1 : 2;
      continue;
    }
    if (row_ == span_.capacity) {  // only a piece that starts off a record boundary gets here
      fail(p, 0, "more records than lines (a piece began inside a quoted field)");
      break;
    }
    Outcome o = Outcome::ok;
    for (std::size_t j = 0; j < ncols && o == Outcome::ok; ++j) {
      Stop s;
      if (!fast_number(piece_.columns[j], p, s)) {
        const char* at = p;
        s = read_field(p, in_.data_end, in_.delimiter, f);
        piece_.literal_quote |= f.literal_quote;
        if (is_error(s)) {
          fail(p, j + 1, describe(s, p));
          o = Outcome::error;
          break;
        }
        o = store(j, f, at);
        if (o == Outcome::restart) return j;
      }
      if (o == Outcome::ok) o = end_of_row(s, j, p);
    }
    if (o != Outcome::ok) break;
    ++row_;
  }
  piece_.rows = row_;
  piece_.stop = p;
  return kNone;
}

// The common field of a number column in one pass instead of two (find its end, then parse it):
// an unquoted integer of up to 18 digits in an i64 column, or a float in an f64 column that
// holds fractions for sure, followed by a delimiter or line end. Anything else (false) takes the
// general path, which handles it from the same place.
bool PieceParser::fast_number(PieceColumn& c, const char*& p, Stop& s) {
  if (!c.decided) return false;
  const char* end = in_.data_end;
  const char* q = p;
  if (c.type == ColumnType::i64) {
    const bool negative = q < end && *q == '-';
    q += negative;
    const char* digits = q;
    std::uint64_t v = 0;
    for (unsigned d; q < end && q - digits < 18 && (d = static_cast<unsigned char>(*q) - unsigned{'0'}) <= 9; ++q)
      v = v * 10 + d;
    if (q == digits || (!c.fixed && *digits == '0' && q - digits > 1) || !terminated(q, s)) return false;
    put(c, row_, negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v));
    if (negative && v == 0) c.negative_zeros.push_back(row_);
  } else if (c.type == ColumnType::f64 && (c.fixed || c.saw_fraction)) {
    double d;
    const auto r = std::from_chars(q, end, d);
    if (r.ec != std::errc() || r.ptr == q || (!c.fixed && has_leading_zero({q, static_cast<std::size_t>(r.ptr - q)})))
      return false;
    q = r.ptr;
    if (!terminated(q, s)) return false;
    put(c, row_, d);
  } else {
    return false;
  }
  p = q;
  return true;
}

bool PieceParser::terminated(const char*& q, Stop& s) const {
  const char* end = in_.data_end;
  if (q == end) s = Stop::data_end;
  else if (*q == in_.delimiter) ++q, s = Stop::delimiter;
  else if (*q == '\n') ++q, s = Stop::line_end;
  else if (*q == '\r' && q + 1 < end && q[1] == '\n') q += 2, s = Stop::line_end;
  else return false;
  return true;
}

// After field j: a row must end after its last field and only there.
Outcome PieceParser::end_of_row(Stop s, std::size_t j, const char* p) {
  const std::size_t ncols = in_.columns;
  if (j + 1 < ncols && s != Stop::delimiter) {
    fail(p - (s == Stop::line_end ? 1 : 0), j + 2,
         fmt::format("the row ends after {} field{}; the header has {}", j + 1, j ? "s" : "", ncols));
    return Outcome::error;
  }
  if (j + 1 == ncols && s == Stop::delimiter) {
    fail(p, ncols + 1, fmt::format("more fields than the header's {}", ncols));
    return Outcome::error;
  }
  return Outcome::ok;
}

void PieceParser::note_overflow(PieceColumn& c, const Field& f, const char* at) {
  if (c.overflow_pos != kNone) return;
  c.overflow_pos = static_cast<std::size_t>(at - in_.text);
  c.overflow_text = std::string(f.begin, f.end);
}

// A float beyond f64's range in an inferred column: ±inf for now, an error once the column is
// known to be a number column (reconcile_types); a column that turns out str reads it as text.
double PieceParser::note_huge(PieceColumn& c, const Field& f, const char* at) {
  if (c.huge_pos == kNone) {
    c.huge_pos = static_cast<std::size_t>(at - in_.text);
    c.huge_text = std::string(f.begin, f.end);
  }
  c.saw_fraction = true;
  return *f.begin == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

// Whether an inferred column may read the field as a number: not escaped, no leading zero.
bool may_be_number(const Field& f) { return !f.escaped && !has_leading_zero({f.begin, f.size()}); }

Outcome PieceParser::decide(PieceColumn& c, const Field& f, const char* at) {
  std::int64_t i;
  double d;
  const bool number = may_be_number(f);
  const Parsed as_int = number ? parse_number(f.begin, f.end, i) : Parsed::not_a_number;
  if (as_int == Parsed::ok) {
    settle_undecided(c, ColumnType::i64, row_);
    put_integer(c, i, f);
    return Outcome::ok;
  }
  const Parsed as_float = number ? parse_number(f.begin, f.end, d) : Parsed::not_a_number;
  if (as_float != Parsed::not_a_number) {
    settle_undecided(c, ColumnType::f64, row_);
    if (as_float == Parsed::out_of_range) d = note_huge(c, f, at);
    else if (as_int == Parsed::out_of_range) note_overflow(c, f, at);
    else c.saw_fraction = true;
    put(c, row_, d);
    return Outcome::ok;
  }
  settle_undecided(c, ColumnType::str, row_, byte_guess());
  return store(static_cast<std::size_t>(&c - piece_.columns.data()), f, at);
}

Outcome PieceParser::store_i64(PieceColumn& c, const Field& f, const char* at) {
  if (!may_be_number(f)) return Outcome::restart;
  std::int64_t i;
  const Parsed r = parse_number(f.begin, f.end, i);
  if (r == Parsed::ok) {
    put_integer(c, i, f);
    return Outcome::ok;
  }
  double d;
  const Parsed as_float = parse_number(f.begin, f.end, d);
  if (as_float == Parsed::not_a_number) return Outcome::restart;
  convert_to_f64(c, row_);
  if (as_float == Parsed::out_of_range) d = note_huge(c, f, at);
  else if (r == Parsed::out_of_range) note_overflow(c, f, at);
  else c.saw_fraction = true;
  put(c, row_, d);
  return Outcome::ok;
}

Outcome PieceParser::store_f64(PieceColumn& c, const Field& f, const char* at) {
  if (!may_be_number(f)) return Outcome::restart;
  double d;
  const Parsed as_float = parse_number(f.begin, f.end, d);
  if (as_float == Parsed::not_a_number) return Outcome::restart;
  if (as_float == Parsed::out_of_range) d = note_huge(c, f, at);
  put(c, row_, d);
  if (!c.saw_fraction) {  // tell integers (and overflowing ones) from fractions until one appears
    std::int64_t i;
    const Parsed r = parse_number(f.begin, f.end, i);
    if (r == Parsed::out_of_range) note_overflow(c, f, at);
    else if (r == Parsed::not_a_number) c.saw_fraction = true;
  }
  return Outcome::ok;
}

Outcome PieceParser::store_fixed(std::size_t j, PieceColumn& c, const Field& f, const char* at) {
  const Parsed r = visit_numeric(c.type, [&](auto zero) {
    decltype(zero) v{};
    const Parsed p = f.escaped ? Parsed::not_a_number : parse_number(f.begin, f.end, v);
    if (p == Parsed::ok) put(c, row_, v);
    return p;
  });
  if (r == Parsed::ok) return Outcome::ok;
  std::string text;
  append_value(f, text);
  fail(at, j + 1,
       fmt::format("'{}' {} {}", printable(text.data(), text.data() + text.size()),
                   r == Parsed::out_of_range ? "is out of the range of" : "is not", with_article(c.type)));
  return Outcome::error;
}

}  // namespace

void settle_undecided(PieceColumn& c, ColumnType t, std::size_t rows, std::size_t byte_capacity) {
  c.type = t;
  c.decided = true;
  std::memset(c.slots, 0, rows * 8);  // numbers 0; strings: every row ends at offset 0
  if (t == ColumnType::str) c.bytes.reserve(byte_capacity);
  else c.missing.insert(c.missing.end(), c.empties.begin(), c.empties.end());  // "" is missing in numbers
  c.empties.clear();
}

void convert_to_f64(PieceColumn& c, std::size_t rows) {
  for (std::size_t i = 0; i < rows; ++i) {
    std::int64_t x;
    std::memcpy(&x, c.slots + i * 8, 8);
    const auto d = static_cast<double>(x);
    std::memcpy(c.slots + i * 8, &d, 8);
  }
  for (const std::size_t r : c.negative_zeros)
    if (r < rows) std::memcpy(c.slots + r * 8, &kNegativeZero, 8);
  c.negative_zeros.clear();
  c.type = ColumnType::f64;
}

Piece parse_piece(const PieceInput& in, const PieceSpan& span, std::vector<ColumnStart> starts) {
  for (;;) {
    Piece piece;
    PieceParser parser(in, span, piece, starts);
    const std::size_t restart = parser.run();
    if (restart == kNone) return piece;
    starts[restart] = {ColumnType::str, true};
  }
}

}  // namespace tandem::csv
