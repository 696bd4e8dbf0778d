// The GPU CSV parser's field classes (src/scan/gpu/csv_field.hpp) agree with the CPU reader's
// number parsing: integers and fast-path decimals convert to the same bits, text is no number.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "scan/gpu/csv_field.hpp"
#include "table/csv_values.hpp"

using namespace tandem;
using namespace tandem::scan;

namespace {

std::uint32_t cls(const std::string& s) { return classify_unquoted(s.data(), s.data() + s.size()); }

// Whatever the class says, the CPU reader must agree.
void check_agrees(const std::string& s) {
  const char* b = s.data();
  const char* e = b + s.size();
  std::int64_t i = 0;
  double d = 0;
  const auto as_int = csv::parse_number(b, e, i);
  const auto as_double = csv::parse_number(b, e, d);
  switch (cls(s)) {
    case kFieldInteger:
      ASSERT_EQ(as_int, csv::Parsed::ok) << s;
      EXPECT_EQ(integer_value(b, e), i) << s;
      ASSERT_EQ(as_double, csv::Parsed::ok) << s;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(decimal_value(b, e)), std::bit_cast<std::uint64_t>(d)) << s;
      break;
    case kFieldDecimal:
      EXPECT_NE(as_int, csv::Parsed::ok) << s;
      ASSERT_EQ(as_double, csv::Parsed::ok) << s;
      EXPECT_EQ(std::bit_cast<std::uint64_t>(decimal_value(b, e)), std::bit_cast<std::uint64_t>(d)) << s;
      break;
    case kFieldText:
      EXPECT_EQ(as_int, csv::Parsed::not_a_number) << s;
      EXPECT_EQ(as_double, csv::Parsed::not_a_number) << s;
      break;
    case kFieldMissing: EXPECT_TRUE(s.empty()); break;
    default: break;  // unsure: the CPU reader decides
  }
}

}  // namespace

TEST(CsvFieldClass, Examples) {
  EXPECT_EQ(cls(""), kFieldMissing);
  for (const char* s : {"0", "-0", "+5", "123456789012345678", "-42"}) EXPECT_EQ(cls(s), kFieldInteger) << s;
  for (const char* s : {"0.5", "-0.5", "1.", ".5", "1e5", "1E-5", "12.345678", "-0.0", "3.25e+2"})
    EXPECT_EQ(cls(s), kFieldDecimal) << s;
  for (const char* s : {"id001", "abc", "2024-01-05", "1-2", "-", "+", ".", "e5", "1e", "1e+", " 1", "1 ", "+-5", "--5",
                        "1.2.3", "0x10", "infinite", "nano"})
    EXPECT_EQ(cls(s), kFieldText) << s;
  for (const char* s : {"inf", "-Infinity", "NaN", "nan(1)", "007", "00.5", "1234567890123456789", "1e400",
                        "12345678901234567890.5", "1e23"})
    EXPECT_EQ(cls(s), kFieldUnsure) << s;
}

TEST(CsvFieldClass, ExamplesAgreeWithTheCpuReader) {
  for (const char* s : {"",
                        "0",
                        "-0",
                        "+5",
                        "123456789012345678",
                        "-42",
                        "0.5",
                        "-0.5",
                        "1.",
                        ".5",
                        "1e5",
                        "1E-5",
                        "12.345678",
                        "-0.0",
                        "3.25e+2",
                        "id001",
                        "abc",
                        "2024-01-05",
                        "1-2",
                        "-",
                        "+",
                        ".",
                        "e5",
                        "1e",
                        "1e+",
                        " 1",
                        "1 ",
                        "+-5",
                        "--5",
                        "1.2.3",
                        "0x10",
                        "infinite",
                        "nano",
                        "9007199254740993.0",
                        "0.1",
                        "0.30000000000000004",
                        "1e22",
                        "1e-22",
                        "4.9e-3",
                        "99999999999999999.9"})
    check_agrees(s);
}

TEST(CsvFieldClass, RandomNumbersAgreeWithTheCpuReader) {
  std::mt19937_64 rng(7);
  const std::string alphabet = "0123456789+-.eE";
  for (int i = 0; i < 200000; ++i) {
    std::string s;
    if (i % 2) {
      // Random bytes of the number alphabet: mostly text, some numbers.
      const int len = 1 + static_cast<int>(rng() % 8);
      for (int j = 0; j < len; ++j) s += alphabet[rng() % alphabet.size()];
    } else {
      // Well-formed decimals of 1-20 digits, a point somewhere, maybe an exponent.
      const int digits = 1 + static_cast<int>(rng() % 20);
      if (rng() % 3 == 0) s += '-';
      for (int j = 0; j < digits; ++j) s += static_cast<char>('0' + rng() % 10);
      if (rng() % 2) s.insert(s.size() - rng() % digits, 1, '.');
      if (rng() % 4 == 0) s += "e" + std::to_string(static_cast<int>(rng() % 50) - 25);
    }
    check_agrees(s);
    if (HasFatalFailure()) return;
  }
}
