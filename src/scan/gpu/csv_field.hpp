// What one CSV field's bytes are, decided the same way on the host and on the GPU: the device
// parser classifies every field of a needed column, ORs the classes per column to infer its type,
// then converts. Only values whose conversion is exact by simple arithmetic are converted on the
// device (integers of up to 18 digits; decimals of up to 19 significant digits whose power of
// ten is at most 22: Clinger's fast path, correctly rounded, as std::from_chars). Anything the
// device cannot decide for sure (inf, nan, long integers, leading zeros, huge exponents, quoted
// numbers) is `unsure`, and the caller reads the file with the CPU reader instead.
#pragma once
#include <cstdint>

#include "tandem/cuda/hd.hpp"

namespace tandem::scan {

enum FieldClass : std::uint32_t {
  kFieldMissing = 1u << 0,      // an empty unquoted field
  kFieldInteger = 1u << 1,      // [+-]?digit{1,18}, no leading zero (except "0" itself)
  kFieldDecimal = 1u << 2,      // a number with '.' or an exponent, on the fast path
  kFieldText = 1u << 3,         // holds a byte no number has: a string for sure
  kFieldUnsure = 1u << 4,       // only the CPU reader can say
  kFieldQuotedEmpty = 1u << 5,  // "": an empty string, or missing in a number column
  kFieldQuotedText = 1u << 6,   // a quoted field whose bytes read as a number
};

// Case-insensitive: does [b, e) spell `word` (lower case)?
TANDEM_HD bool spells(const char* b, const char* e, const char* word) {
  for (; b < e && *word; ++b, ++word) {
    char c = *b;
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != *word) return false;
  }
  return b == e && *word == 0;
}

TANDEM_HD bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The class of an unquoted field's bytes [b, e). The grammar is std::from_chars' (general
// format) with one optional leading sign: a field that does not match it whole is text.
TANDEM_HD std::uint32_t classify_unquoted(const char* b, const char* e) {
  if (b == e) return kFieldMissing;
  const char* p = b + (*b == '+' || *b == '-');
  // inf, infinity, nan and nan(...) parse as floats.
  if (p < e && (*p == 'i' || *p == 'I' || *p == 'n' || *p == 'N')) {
    if (spells(p, e, "inf") || spells(p, e, "infinity") || spells(p, e, "nan")) return kFieldUnsure;
    if (e - p >= 5 && spells(p, p + 4, "nan(") && e[-1] == ')') return kFieldUnsure;
    return kFieldText;
  }
  const char* digits = p;
  std::uint64_t mantissa = 0;
  int significant = 0, exponent = 0;
  bool too_long = false;
  auto take = [&](char c) {
    if (significant == 0 && c == '0') return;
    if (++significant > 19) too_long = true;
    else mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
  };
  for (; p < e && is_digit(*p); ++p) take(*p);
  const auto int_digits = p - digits;
  bool any_digit = int_digits > 0, decimal = false;
  if (p < e && *p == '.') {
    decimal = true;
    for (++p; p < e && is_digit(*p); ++p) {
      any_digit = true;
      --exponent;
      take(*p);
    }
  }
  if (!any_digit) return kFieldText;
  if (p < e && (*p == 'e' || *p == 'E')) {
    decimal = true;
    const bool negative = p + 1 < e && p[1] == '-';
    p += 1 + (p + 1 < e && (p[1] == '+' || p[1] == '-'));
    const char* x0 = p;
    int x = 0;
    for (; p < e && is_digit(*p); ++p) x = p - x0 < 4 ? x * 10 + (*p - '0') : 10000;
    if (p == x0) return kFieldText;
    exponent += negative ? -x : x;
  }
  if (p != e) return kFieldText;
  if (int_digits >= 2 && *digits == '0') return kFieldUnsure;  // leading zeros: the CPU reader's rule
  if (!decimal) return int_digits <= 18 ? kFieldInteger : kFieldUnsure;
  if (too_long || mantissa > (std::uint64_t{1} << 53) || exponent > 22 || exponent < -22) return kFieldUnsure;
  return kFieldDecimal;
}

// The value of a field classified kFieldInteger.
TANDEM_HD std::int64_t integer_value(const char* b, const char* e) {
  const bool negative = *b == '-';
  b += (*b == '-' || *b == '+');
  std::int64_t v = 0;
  for (; b < e; ++b) v = v * 10 + (*b - '0');
  return negative ? -v : v;
}

TANDEM_HD double power_of_ten(int k) {  // 0 <= k <= 22: exact in a double
  double p = 1;
  for (int i = 0; i < k; ++i) p *= 10;
  return p;
}

// The value of a field classified kFieldInteger or kFieldDecimal, correctly rounded: the
// mantissa (below 2^53) and the power of ten (at most 10^22) are exact doubles, so one multiply
// or divide rounds once.
TANDEM_HD double decimal_value(const char* b, const char* e) {
  const bool negative = *b == '-';
  const char* p = b + (*b == '-' || *b == '+');
  std::uint64_t mantissa = 0;
  int exponent = 0;
  bool fraction = false;
  for (; p < e; ++p) {
    const char c = *p;
    if (c == '.') {
      fraction = true;
    } else if (c == 'e' || c == 'E') {
      ++p;
      const bool neg = p < e && *p == '-';
      if (p < e && (*p == '+' || *p == '-')) ++p;
      int x = 0;
      for (; p < e; ++p) x = x * 10 + (*p - '0');
      exponent += neg ? -x : x;
      break;
    } else {
      mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
      exponent -= fraction;
    }
  }
  double v = static_cast<double>(mantissa);
  v = exponent >= 0 ? v * power_of_ten(exponent) : v / power_of_ten(-exponent);
  return negative ? -v : v;
}

}  // namespace tandem::scan
