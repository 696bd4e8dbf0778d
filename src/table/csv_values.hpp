// Numbers in CSV fields: integers and floats with std::from_chars (an optional leading '+'
// allowed), and the type a field's text suggests when the schema does not name one.
#pragma once
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

namespace tandem::csv {

enum class Parsed : std::uint8_t { ok, not_a_number, out_of_range };

namespace detail {
// from_chars takes no '+'; one is allowed when a digit, '.', 'i' or 'n' follows.
inline const char* skip_plus(const char* b, const char* e) {
  if (e - b >= 2 && *b == '+' && b[1] != '-' && b[1] != '+') return b + 1;
  return b;
}

// Clinger's fast path: a plain decimal ([-]digits[.digits], no exponent) of at most 19 digits
// whose digits make an integer m < 2^53 with at most 22 after the point is m / 10^k, both exact
// doubles, so one correctly rounded division gives the value from_chars gives. False for
// anything else (from_chars decides it).
inline bool plain_decimal(const char* b, const char* e, double& out) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = b < e && *b == '-';
  const char* p = b + negative;
  std::uint64_t m = 0;
  const char* digits = p;
  while (p < e && static_cast<unsigned>(*p - '0') <= 9) m = m * 10 + static_cast<unsigned>(*p++ - '0');
  std::ptrdiff_t count = p - digits, fraction = 0;
  if (p < e && *p == '.') {
    const char* first = ++p;
    while (p < e && static_cast<unsigned>(*p - '0') <= 9) m = m * 10 + static_cast<unsigned>(*p++ - '0');
    fraction = p - first;
    count += fraction;
  }
  if (p != e || count == 0 || count > 19 || fraction > 22 || m > (std::uint64_t{1} << 53)) return false;
  const double v = static_cast<double>(m) / kPow10[fraction];
  out = negative ? -v : v;
  return true;
}

template <class T>
Parsed parse_float_slow(const char* b, const char* e, T& out) {
  // from_chars says out_of_range for overflow and for underflow alike; strtod tells them apart.
  const std::string s(b, e);
  const double d = std::strtod(s.c_str(), nullptr);
  const T v = static_cast<T>(d);
  if (v == std::numeric_limits<T>::infinity() || v == -std::numeric_limits<T>::infinity()) return Parsed::out_of_range;
  out = v;
  return Parsed::ok;
}
}  // namespace detail

// Parses all of [b, e) as a T: integers in base 10, floats in fixed or scientific notation, inf
// or nan. Floats too large for T are out_of_range; too small ones round (to 0 or a subnormal).
template <class T>
Parsed parse_number(const char* b, const char* e, T& out) {
  if constexpr (std::is_same_v<T, std::int64_t>) {
    // Up to 18 digits cannot overflow: one multiply-add per digit, no checks.
    const char* p = b + (b < e && (*b == '-' || *b == '+'));
    if (e - p > 0 && e - p <= 18) {
      std::uint64_t v = 0;
      for (; p < e; ++p) {
        const unsigned d = static_cast<unsigned char>(*p) - unsigned{'0'};
        if (d > 9) return Parsed::not_a_number;
        v = v * 10 + d;
      }
      out = *b == '-' ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
      return Parsed::ok;
    }
  }
  if constexpr (std::is_same_v<T, double>)
    if (detail::plain_decimal(b, e, out)) return Parsed::ok;
  b = detail::skip_plus(b, e);
  if constexpr (std::is_integral_v<T>) {
    const auto r = std::from_chars(b, e, out);
    if (r.ptr != e || b == e) return Parsed::not_a_number;
    return r.ec == std::errc() ? Parsed::ok : Parsed::out_of_range;
  } else {
    const auto r = std::from_chars(b, e, out, std::chars_format::general);
    if (r.ptr != e || b == e) return Parsed::not_a_number;
    if (r.ec == std::errc()) return Parsed::ok;
    if (r.ec == std::errc::result_out_of_range) return detail::parse_float_slow(b, e, out);
    return Parsed::not_a_number;
  }
}

}  // namespace tandem::csv
