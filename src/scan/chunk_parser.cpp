#include "scan/chunk_parser.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "scan/column_out.hpp"
#include "table/csv_dialect.hpp"
#include "table/csv_scan.hpp"
#include "table/csv_values.hpp"
#include "table/made_here.hpp"

namespace tandem::scan {

using csv::Field;
using csv::has_leading_zero;
using csv::read_field;
using csv::Stop;

std::string with_article(ColumnType t) {
  const auto name = to_string(t);
  const bool vowel_sound = name[0] == 'i' || name[0] == 'f';
  return fmt::format("{} {}", vowel_sound ? "an" : "a", name);
}

namespace {

enum class Outcome : std::uint8_t { ok, widen, error };

// Converts fields into the chunk's columns; a value that does not fit an inferred column's type
// says which type it needs.
class Columns {
 public:
  Columns(const ChunkInput& in, const std::vector<ColumnType>& types) : in_(in), out_(types.size()) {
    // Room for the most records the chunk can hold (each has a byte per field at least) and for
    // all its bytes in a string column: memory is reserved, not touched, so the arrays never
    // grow (no copies) and pages never written cost nothing.
    const auto bytes = static_cast<std::size_t>(in.end - in.begin);
    for (std::size_t k = 0; k < types.size(); ++k) out_[k].start(types[k], bytes / in.columns + 2, bytes);
  }

  // The common fields inline: a string, or an unquoted integer of up to 18 digits in an
  // inferred i64 column. Fields lie in the chunk, whose padding makes 8 bytes from any field's
  // start readable.
  Outcome store(std::size_t k, const Field& f) {
    ColumnOut& c = out_[k];
    if (c.type == ColumnType::str && !f.escaped && (f.quoted || !f.empty())) {
      c.push_string(f.begin, f.size());
      return Outcome::ok;
    }
    if (c.type == ColumnType::i64 && !f.quoted && !(*in_.plans)[k].fixed) {
      const char* p = f.begin + (f.size() > 1 && *f.begin == '-');
      const std::size_t digits = static_cast<std::size_t>(f.end - p);
      if (digits >= 1 && digits <= 18 && (*p != '0' || digits == 1)) {
        std::uint64_t v = 0;
        if (digits <= 8) {
          if (!eight_digits(p, digits, v)) return store_general(k, f);
        } else {
          for (const char* q = p; q < f.end; ++q) {
            const unsigned d = static_cast<unsigned char>(*q) - unsigned{'0'};
            if (d > 9) return store_general(k, f);
            v = v * 10 + d;
          }
        }
        c.push_number(p != f.begin ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v));
        return Outcome::ok;
      }
    }
    return store_general(k, f);
  }

  // The n (1–8) digits at p as a number, all eight bytes read at once (SWAR, as simdjson and
  // fast_float parse eight digits); false when one of them is no digit.
  static bool eight_digits(const char* p, std::size_t n, std::uint64_t& v) {
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    const unsigned shift = static_cast<unsigned>(8 * (8 - n));
    x <<= shift;  // the n bytes to the top (little-endian: the first digit highest of them), zeros below
    const std::uint64_t mine = ~std::uint64_t{0} << shift;
    constexpr std::uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ULL, kZeros = 0x3030303030303030ULL;
    if ((x & kHigh) != (kZeros & mine) || ((x + 0x0606060606060606ULL) & kHigh & mine) != (kZeros & mine)) return false;
    x -= kZeros & mine;
    x = x * 10 + (x >> 8);  // pairs of digits
    x = (((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
         (((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >>
        32;
    v = x;
    return true;
  }

  Outcome store_general(std::size_t k, const Field& f) {
    ColumnOut& c = out_[k];
    const ColumnPlan& plan = (*in_.plans)[k];
    if (c.type == ColumnType::str) {
      if (f.empty() && !f.quoted) c.push_missing();
      else if (!f.escaped) c.push_string(f.begin, f.size());
      else push_unescaped(c, f);
      return Outcome::ok;
    }
    if (f.empty()) {
      c.push_missing();
      return Outcome::ok;
    }
    if (plan.fixed) return store_fixed(c, f, k);
    if (c.type == ColumnType::i64) return store_i64(c, f, k);
    return store_f64(c, f, k);
  }

  ColumnType wanted(std::size_t k) const { return wanted_[k]; }
  std::vector<ColumnOut>& out() { return out_; }
  std::string error;

 private:
  static void push_unescaped(ColumnOut& c, const Field& f) {
    std::string s;
    csv::append_value(f, s);
    c.push_string(s.data(), s.size());
  }

  Outcome widen(std::size_t k, const Field& f) {
    double d;
    // A float beyond f64's range is still a number: store_f64 reports it (as the reader does).
    const csv::Parsed p = f.escaped || has_leading_zero({f.begin, f.size()}) ? csv::Parsed::not_a_number
                                                                             : csv::parse_number(f.begin, f.end, d);
    const bool number = p == csv::Parsed::ok || p == csv::Parsed::out_of_range;
    wanted_.resize(out_.size(), ColumnType::i64);
    wanted_[k] = number && out_[k].type == ColumnType::i64 ? ColumnType::f64 : ColumnType::str;
    widened_ = k;
    return Outcome::widen;
  }

  Outcome store_i64(ColumnOut& c, const Field& f, std::size_t k) {
    std::int64_t v;
    if (f.escaped || has_leading_zero({f.begin, f.size()}) || csv::parse_number(f.begin, f.end, v) != csv::Parsed::ok)
      return widen(k, f);
    c.push_number(v);
    return Outcome::ok;
  }

  Outcome store_f64(ColumnOut& c, const Field& f, std::size_t k) {
    double v;
    if (f.escaped || has_leading_zero({f.begin, f.size()})) return widen(k, f);
    const csv::Parsed p = csv::parse_number(f.begin, f.end, v);
    if (p == csv::Parsed::out_of_range) {
      error = fmt::format(
          "'{}' is beyond the range of f64 (write inf for infinity, or name the column's type str in the schema to "
          "keep it as text)",
          csv::printable(f.begin, f.end));
      return Outcome::error;
    }
    if (p != csv::Parsed::ok) return widen(k, f);
    c.push_number(v);
    return Outcome::ok;
  }

  Outcome store_fixed(ColumnOut& c, const Field& f, std::size_t) {
    const csv::Parsed r = visit_numeric(c.type, [&](auto zero) {
      decltype(zero) v{};
      const csv::Parsed p = f.escaped ? csv::Parsed::not_a_number : csv::parse_number(f.begin, f.end, v);
      if (p == csv::Parsed::ok) c.push_number(v);
      return p;
    });
    if (r == csv::Parsed::ok) return Outcome::ok;
    std::string text;
    csv::append_value(f, text);
    error = fmt::format("'{}' {} {}", csv::printable(text.data(), text.data() + text.size()),
                        r == csv::Parsed::out_of_range ? "is out of the range of" : "is not", with_article(c.type));
    return Outcome::error;
  }

  const ChunkInput& in_;
  std::vector<ColumnOut> out_;
  std::vector<ColumnType> wanted_;
  std::size_t widened_{0};

 public:
  std::size_t widened() const { return widened_; }
};

struct Walk {
  // Where records lie, when the input asks (offsets from the chunk's begin).
  void add_record(const ChunkInput& in, const char* start, const char* end) {
    if (!in.records) return;
    record_starts.push_back(static_cast<std::uint32_t>(start - in.begin));
    record_ends.push_back(static_cast<std::uint32_t>(end - in.begin));
  }
  std::vector<std::uint32_t> record_starts, record_ends;
  Outcome outcome{Outcome::ok};
  bool fallback{false};  // the fast path met something the scalar path must read
  std::size_t rows{0};
  std::size_t newlines{0};
  std::size_t error_offset{0}, error_column{0};
  std::string error_what;
};

// --- the fast path ----------------------------------------------------------------------------

// Field [fb, fe) of column col, ended by a delimiter or (at_lf) a line feed, holds a quote only
// as its first byte when it is quoted (the mask checks saw to that).
inline bool fast_field(const char* fb, const char* fe, bool at_lf, Field& f) {
  if (at_lf && fe > fb && fe[-1] == '\r') --fe;
  if (fe > fb && *fb == '"') {
    if (fe - fb < 2 || fe[-1] != '"') return false;
    f.begin = fb + 1;
    f.end = fe - 1;
    f.quoted = true;
    f.escaped = std::memchr(f.begin, '"', f.size()) != nullptr;
    return true;
  }
  f.begin = fb;
  f.end = fe;
  f.quoted = f.escaped = false;
  return true;
}

Walk walk_fast(const ChunkInput& in, Columns& cols) {
  Walk w;
  const MaskFn masks = mask_function(in.simd);
  const PrefixXorFn pxor = prefix_xor_function(in.simd);
  const char* b = in.begin;
  const auto len = static_cast<std::size_t>(in.end - in.begin);
  const std::vector<int>& slot = *in.slot;
  const std::size_t last_col = in.columns - 1;
  const char d = in.delimiter;
  std::uint64_t in_quote = 0;  // all ones when the previous block ended inside quotes
  std::uint64_t prev_sep = 1, prev_close = 0;
  const char* fb = b;
  const char* record = b;  // where the record being walked starts
  std::size_t col = 0;
  Field f;
  for (std::size_t off = 0; off < len; off += 64) {
    const Masks m = masks(b + off, d);
    const std::uint64_t valid = len - off >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << (len - off)) - 1;
    const std::uint64_t q = m.quote & valid;
    std::uint64_t inq = in_quote;
    const std::uint64_t seps = m.delimiter | m.lf;
    if (q) {
      inq = pxor(q) ^ in_quote;
      const std::uint64_t opening = q & inq, closing = q & ~inq;
      if (opening & ~((seps << 1) | prev_sep | (closing << 1) | prev_close)) return w.fallback = true, w;
      const char next = b[off + 64];
      std::uint64_t may_follow = ((seps | m.cr | m.quote) >> 1) |
                                 (std::uint64_t{next == d || next == '\n' || next == '\r' || next == '"'} << 63);
      if (len - off <= 64) may_follow |= std::uint64_t{1} << (len - off - 1);
      if (closing & ~may_follow) return w.fallback = true, w;
      prev_close = closing >> 63;
    } else {
      prev_close = 0;
    }
    in_quote = static_cast<std::uint64_t>(-static_cast<std::int64_t>(inq >> 63));
    const std::uint64_t cr = m.cr & ~inq & valid;
    if (cr) {
      const std::uint64_t lf_next = (m.lf >> 1) | (std::uint64_t{b[off + 64] == '\n'} << 63);
      if (cr & ~lf_next) return w.fallback = true, w;
    }
    prev_sep = (seps >> 63) & ~(inq >> 63);
    // Line feeds for line numbers: those inside quotes here (rare: no population count for a
    // block without quotes, which the processor may lack an instruction for), the others as the
    // loop meets them.
    if (inq) w.newlines += static_cast<std::size_t>(std::popcount(m.lf & inq & valid));
    for (std::uint64_t s = seps & ~inq & valid; s; s &= s - 1) {
      const std::size_t pos = off + static_cast<std::size_t>(std::countr_zero(s));
      const char* fe = b + pos;
      const bool at_lf = b[pos] == '\n';
      w.newlines += at_lf;
      if (at_lf ? col != last_col : col == last_col) {
        if (at_lf && col == 0 && last_col > 0 && (fe == fb || (fe == fb + 1 && *fb == '\r'))) {
          fb = record = fe + 1;  // a blank line
          continue;
        }
        return w.fallback = true, w;
      }
      if (const int k = slot[col]; k >= 0) {
        if (!fast_field(fb, fe, at_lf, f)) return w.fallback = true, w;
        const Outcome o = cols.store(static_cast<std::size_t>(k), f);
        if (o != Outcome::ok) {
          if (o == Outcome::error) w.fallback = true;
          w.outcome = o;
          return w;
        }
      }
      fb = fe + 1;
      if (at_lf) {
        col = 0;
        ++w.rows;
        w.add_record(in, record, fb);
        record = fb;
      } else {
        ++col;
      }
    }
  }
  if (in_quote) return w.fallback = true, w;  // an unterminated quote: the scalar path names it
  if (fb < in.end || col > 0) {               // the last record has no line feed
    if (col != last_col) return w.fallback = true, w;
    if (const int k = slot[col]; k >= 0) {
      if (!fast_field(fb, in.end, false, f)) return w.fallback = true, w;
      const Outcome o = cols.store(static_cast<std::size_t>(k), f);
      if (o != Outcome::ok) {
        if (o == Outcome::error) w.fallback = true;
        w.outcome = o;
        return w;
      }
    }
    ++w.rows;
    w.add_record(in, record, in.end);
  }
  return w;
}

// --- the scalar path --------------------------------------------------------------------------

Walk walk_scalar(const ChunkInput& in, Columns& cols) {
  Walk w;
  const std::size_t ncols = in.columns;
  const char* p = in.begin;
  const char* end = in.end;
  auto fail = [&](const char* at, std::size_t column, std::string what) {
    w.outcome = Outcome::error;
    w.error_offset = static_cast<std::size_t>(at - in.begin);
    w.error_column = column;
    w.error_what = std::move(what);
    return w;
  };
  Field f;
  w.newlines = static_cast<std::size_t>(std::count(p, end, '\n'));
  while (p < end) {
    if (ncols >= 2 && (*p == '\n' || (*p == '\r' && p + 1 < end && p[1] == '\n'))) {
      p += *p == '\n' ? 1 : 2;
      continue;
    }
    const char* record = p;
    for (std::size_t j = 0; j < ncols; ++j) {
      const char* at = p;
      const Stop s = read_field(p, end, in.delimiter, f);
      if (is_error(s)) return fail(p, j + 1, csv::describe(s, p));
      if (const int k = (*in.slot)[j]; k >= 0) {
        const Outcome o = cols.store(static_cast<std::size_t>(k), f);
        if (o == Outcome::widen) return w.outcome = o, w;
        if (o == Outcome::error) return fail(at, j + 1, cols.error);
      }
      if (j + 1 < ncols && s != Stop::delimiter)
        return fail(p - (s == Stop::line_end ? 1 : 0), j + 2,
                    fmt::format("the row ends after {} field{}; the header has {}", j + 1, j ? "s" : "", ncols));
      if (j + 1 == ncols && s == Stop::delimiter)
        return fail(p, ncols + 1, fmt::format("more fields than the header's {}", ncols));
    }
    ++w.rows;
    w.add_record(in, record, p);
  }
  return w;
}

ChunkResult finish(const ChunkInput& in, Columns& cols, Walk& w, const std::vector<ColumnType>& types, bool widened) {
  ChunkResult r;
  r.types = types;
  r.rows = w.rows;
  r.newlines = w.newlines;
  r.record_starts = std::move(w.record_starts);
  r.record_ends = std::move(w.record_ends);
  r.status = widened ? ChunkStatus::widened : ChunkStatus::ok;
  if (w.outcome == Outcome::error) {
    r.status = ChunkStatus::error;
    r.error_offset = w.error_offset;
    r.error_column = w.error_column;
    r.error_what = w.error_what;
    r.error_newlines = static_cast<std::size_t>(std::count(in.begin, in.begin + w.error_offset, '\n'));
    return r;
  }
  std::vector<Column> columns;
  for (std::size_t k = 0; k < types.size(); ++k) columns.push_back(cols.out()[k].finish((*in.plans)[k].name));
  r.table = Table(std::move(columns), detail::kMadeHere);  // offsets written in order
  return r;
}

ChunkResult parse(const ChunkInput& in, bool allow_fast) {
  if (in.records && static_cast<std::size_t>(in.end - in.begin) > UINT32_MAX) {
    ChunkResult r;  // record offsets are 32-bit: only a single record over 4 GiB makes such a chunk
    r.status = ChunkStatus::error;
    r.error_what = "a record longer than 4 GiB";
    return r;
  }
  std::vector<ColumnType> types;
  for (const auto& p : *in.plans) types.push_back(p.type);
  bool widened = false;
  bool fast = allow_fast;
  for (;;) {
    Columns cols(in, types);
    Walk w = fast ? walk_fast(in, cols) : walk_scalar(in, cols);
    if (w.fallback) {
      fast = false;
      continue;
    }
    if (w.outcome == Outcome::widen) {
      types[cols.widened()] = cols.wanted(cols.widened());
      widened = true;
      continue;
    }
    ChunkResult r = finish(in, cols, w, types, widened);
    r.used_fast_path = fast;
    return r;
  }
}

}  // namespace

ChunkResult parse_chunk(const ChunkInput& in) { return parse(in, true); }
ChunkResult parse_chunk_scalar(const ChunkInput& in) { return parse(in, false); }

}  // namespace tandem::scan
