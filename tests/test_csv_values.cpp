// The CSV readers' number parsing: the fast path for plain decimals gives the bits std::from_chars
// gives, and leaves everything else to it.
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cstdint>
#include <random>
#include <string>

#include "table/csv_values.hpp"

using namespace tandem;

namespace {

// What from_chars alone says of s.
csv::Parsed reference(const std::string& s, double& out) {
  const char* b = s.data() + (s.size() >= 2 && s[0] == '+' && s[1] != '-' && s[1] != '+');
  const char* e = s.data() + s.size();
  const auto r = std::from_chars(b, e, out, std::chars_format::general);
  if (r.ptr != e || b == e) return csv::Parsed::not_a_number;
  return r.ec == std::errc() ? csv::Parsed::ok : csv::Parsed::out_of_range;
}

void expect_as_from_chars(const std::string& s) {
  double got = 1.5, want = 1.5;
  const csv::Parsed p = csv::parse_number(s.data(), s.data() + s.size(), got);
  const csv::Parsed q = reference(s, want);
  if (q == csv::Parsed::out_of_range) return;  // the slow path tells overflow from underflow
  ASSERT_EQ(p, q) << s;
  if (p == csv::Parsed::ok) {
    EXPECT_EQ(std::bit_cast<std::uint64_t>(got), std::bit_cast<std::uint64_t>(want)) << s;
  }
}

}  // namespace

TEST(CsvValues, PlainDecimalsReadAsFromCharsDoes) {
  for (const char* s : {"0",
                        "-0",
                        "-0.0",
                        "0.",
                        ".5",
                        "-.5",
                        "5.",
                        ".",
                        "-",
                        "",
                        "+1.5",
                        "1.5e3",
                        "inf",
                        "-nan",
                        "9007199254740992",
                        "9007199254740993",
                        "9007199254740992.5",
                        "0.1",
                        "0.30000000000000004",
                        "1234567890123456789",
                        "12345678901234567890",
                        "0.0000000000000000000001",
                        "0.00000000000000000000001",
                        "1..2",
                        "1.2.3",
                        "--1",
                        "1-",
                        "75.987732"})
    expect_as_from_chars(s);
}

TEST(CsvValues, RandomDecimalsReadAsFromCharsDoes) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300000; ++i) {
    std::string s;
    if (rng() % 3 == 0) s += '-';
    const int digits = 1 + static_cast<int>(rng() % 24);
    for (int j = 0; j < digits; ++j) s += static_cast<char>('0' + rng() % 10);
    if (rng() % 4 != 0) s.insert(s.size() - rng() % (digits + 1), 1, '.');
    expect_as_from_chars(s);
    if (HasFatalFailure()) return;
  }
}
