// The streaming CSV scan's pure rules and its structural pass: where a piece may end and what is
// carried, the leading-zero and quote rules, every SIMD level's masks and prefix XOR against
// plain C++, and the fast chunk walk against the scalar one on random CSVs with quotes, doubled
// quotes, CRLF, quoted line breaks and literal quotes.
#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "scan/chunk_parser.hpp"
#include "scan/structural.hpp"
#include "table/csv_dialect.hpp"
#include "table/csv_scan.hpp"
#include "tandem/table/csv.hpp"

using namespace tandem;
using namespace tandem::scan;
using namespace tandem::csv;

namespace {

std::string field_text(std::string_view s) {
  const char* p = s.data();
  Field f;
  (void)read_field(p, s.data() + s.size(), ',', f);
  return std::string(f.begin, f.end);
}

// A random CSV of `rows` records of `cols` fields, and the byte offsets where records end.
struct RandomCsv {
  std::string text;
  std::vector<std::size_t> record_ends;
};

RandomCsv random_csv(std::mt19937_64& rng, std::size_t rows, std::size_t cols, bool literal_quotes) {
  RandomCsv c;
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < cols; ++j) {
      if (j) c.text += ',';
      switch (pick(7)) {
        case 0: c.text += std::to_string(pick(1000) - 500); break;
        case 1: c.text += "\"a,\"\"b\"\"\nc\r\nd\""; break;  // delimiter, doubled quotes, line breaks
        case 2: c.text += ""; break;
        case 3: c.text += "\"\""; break;
        case 4: c.text += literal_quotes ? "37\"N" : "xyz"; break;
        case 5: c.text += std::to_string(pick(100)) + ".25"; break;
        default: c.text += std::string(static_cast<std::size_t>(pick(70)), 'w'); break;
      }
    }
    c.text += pick(3) == 0 ? "\r\n" : "\n";
    c.record_ends.push_back(c.text.size());
  }
  return c;
}

}  // namespace

TEST(ScanRules, LeadingZerosRuleOutNumbersButZeroItselfDoesNot) {
  for (const char* s : {"08123", "00", "-007", "+01", "00.5", "01e3"}) EXPECT_TRUE(has_leading_zero(s)) << s;
  for (const char* s : {"0", "-0", "0.5", "-0.5", "0e3", "10", "", "-", "abc", "1.05"})
    EXPECT_FALSE(has_leading_zero(s)) << s;
}

TEST(ScanRules, AQuoteOpensQuotingOnlyAtAFieldStart) {
  EXPECT_EQ(field_text("37°36'37.8\"N 121°2'17.9\"W,x"), "37°36'37.8\"N 121°2'17.9\"W");
  EXPECT_EQ(field_text("ab\"c\n"), "ab\"c");
  EXPECT_EQ(field_text("\"a,b\",c"), "a,b");
  const std::string stray = "\"ab\"c,d";
  const char* p = stray.data();
  Field f;
  EXPECT_EQ(read_field(p, stray.data() + stray.size(), ',', f), Stop::after_quote);
  EXPECT_EQ(*p, 'c');
  const std::string open = "\"abc";
  p = open.data();
  EXPECT_EQ(read_field(p, open.data() + open.size(), ',', f), Stop::unterminated);
  EXPECT_EQ(p, open.data());
}

TEST(ScanRules, ALiteralQuoteDoesNotHideTheNextRecordEnd) {
  const std::string t = "a\"b,c\nd,e\n";
  EXPECT_EQ(last_record_end(t.data(), t.data() + t.size(), ','), t.data() + t.size());
  EXPECT_EQ(last_record_end(t.data(), t.data() + 8, ','), t.data() + 6);
}

TEST(ScanRules, LastRecordEndOnEveryPrefixOfRandomCsvs) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    const RandomCsv c = random_csv(rng, 30, 1 + round % 4, round % 2 == 1);
    std::size_t expect = 0, next = 0;
    for (std::size_t n = 0; n <= c.text.size(); ++n) {
      while (next < c.record_ends.size() && c.record_ends[next] <= n) expect = c.record_ends[next++];
      ASSERT_EQ(last_record_end(c.text.data(), c.text.data() + n, ',') - c.text.data(), static_cast<long>(expect))
          << "round " << round << " prefix " << n;
    }
  }
}

TEST(ScanRules, CutCarriesThePartialRecordAndGrowsWhenNoneEnds) {
  const std::string t = "1,2\n3,4\n5,";
  Cut c = cut_piece(t.data(), t.size(), false, ',');
  EXPECT_EQ(c.take, 8u);
  EXPECT_EQ(c.carry, 2u);
  EXPECT_FALSE(c.grow);
  c = cut_piece(t.data(), 3, false, ',');  // no whole record: the buffer must grow
  EXPECT_TRUE(c.grow);
  EXPECT_EQ(c.carry, 3u);
  c = cut_piece(t.data(), t.size(), true, ',');  // the end of the input takes everything
  EXPECT_EQ(c.take, t.size());
  EXPECT_EQ(c.carry, 0u);
  const std::string quoted = "1,\"a\nb";  // the line feed is inside an open quote
  EXPECT_TRUE(cut_piece(quoted.data(), quoted.size(), false, ',').grow);
}

TEST(ScanStructural, EveryLevelGivesThePlainMasks) {
  std::mt19937_64 rng(3);
  const char alphabet[] = {',', '\n', '\r', '"', 'a', '\t', ';', '\0', '\xff'};
  std::string bytes(64 * 50, ' ');
  for (auto& b : bytes) b = alphabet[rng() % sizeof alphabet];
  for (const SimdLevel l : {SimdLevel::scalar, SimdLevel::sse2, detected_simd_level()}) {
    const MaskFn f = mask_function(l);
    for (const char d : {',', '\t', ';'})
      for (std::size_t off = 0; off + 64 <= bytes.size(); off += 37) {
        const Masks a = f(bytes.data() + off, d), b = masks_scalar(bytes.data() + off, d);
        ASSERT_EQ(a.delimiter, b.delimiter) << to_string(l);
        ASSERT_EQ(a.lf, b.lf);
        ASSERT_EQ(a.cr, b.cr);
        ASSERT_EQ(a.quote, b.quote);
      }
    const PrefixXorFn px = prefix_xor_function(l);
    for (int i = 0; i < 1000; ++i) {
      const std::uint64_t x = rng() & rng();
      std::uint64_t want = 0, acc = 0;
      for (int bit = 0; bit < 64; ++bit) {
        acc ^= (x >> bit) & 1;
        want |= acc << bit;
      }
      ASSERT_EQ(px(x), want) << to_string(l);
      ASSERT_EQ(prefix_xor_scalar(x), want);
    }
  }
}

TEST(ScanStructural, FastWalkEqualsTheScalarWalkOnRandomCsvs) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 60; ++round) {
    const std::size_t cols = 1 + round % 5;
    RandomCsv c = random_csv(rng, 1 + rng() % 200, cols, round % 3 == 2);
    if (round % 4 == 1) c.text.pop_back();  // the last record without its line feed (or its CR's LF)
    std::string padded = c.text + std::string(64, '\0');
    std::vector<ColumnPlan> plans;
    std::vector<int> slot(cols, -1);
    for (std::size_t j = 0; j < cols; j += 1 + round % 2) {
      slot[j] = static_cast<int>(plans.size());
      plans.push_back({j, "c" + std::to_string(j), ColumnType::i64, false});
    }
    for (const SimdLevel l : {SimdLevel::scalar, SimdLevel::sse2, detected_simd_level()}) {
      const ChunkInput in{padded.data(), padded.data() + c.text.size(), ',', cols, &plans, &slot, l};
      const ChunkResult fast = parse_chunk(in), slow = parse_chunk_scalar(in);
      ASSERT_EQ(fast.status, slow.status) << "round " << round;
      ASSERT_EQ(fast.error_what, slow.error_what);
      ASSERT_EQ(fast.error_offset, slow.error_offset);
      ASSERT_EQ(fast.types, slow.types);
      if (slow.status == ChunkStatus::error) continue;
      ASSERT_EQ(fast.rows, slow.rows);
      ASSERT_EQ(fast.newlines, slow.newlines) << "round " << round;  // line numbers of later chunks' errors
      std::ostringstream a, b;
      write_csv(a, fast.table);
      write_csv(b, slow.table);
      ASSERT_EQ(a.str(), b.str()) << "round " << round;
    }
  }
}

// One i64 column of the given fields (a record each), read by the fast walk.
ChunkResult read_integers(const std::vector<std::string>& fields) {
  static const std::vector<ColumnPlan> plans{{0, "v", ColumnType::i64, false}};
  static const std::vector<int> slot{0};
  std::string text;
  for (const auto& f : fields) text += f + "\n";
  text.append(64, '7');  // padding of digits: a field's last digit is followed by more
  const ChunkInput in{text.data(), text.data() + text.size() - 64, ',', 1, &plans, &slot, detected_simd_level()};
  return parse_chunk(in);
}

TEST(ScanStructural, IntegersOfEveryLengthReadAsTheirValue) {
  std::mt19937_64 rng(5);
  std::vector<std::string> fields;
  std::vector<std::int64_t> want;
  for (int i = 0; i < 20000; ++i) {
    const int digits = 1 + i % 18;
    std::string f = std::to_string(1 + rng() % 9);
    for (int j = 1; j < digits; ++j) f += static_cast<char>('0' + rng() % 10);
    if (rng() % 3 == 0) f = "-" + f;
    fields.push_back(f);
    want.push_back(std::stoll(f));
  }
  fields.push_back("0");
  want.push_back(0);
  const ChunkResult r = read_integers(fields);
  ASSERT_EQ(r.status, ChunkStatus::ok);
  ASSERT_EQ(r.table.column(0).type, ColumnType::i64);
  const auto got = r.table.column(0).numbers<std::int64_t>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << fields[i];
}

TEST(ScanStructural, BlankLinesAndQuotedLineFeedsCountAsLines) {
  std::vector<ColumnPlan> plans{{0, "a", ColumnType::i64, false}, {1, "b", ColumnType::str, false}};
  std::vector<int> slot{0, 1};
  std::string text = "1,x\n\n2,\"y\nz\"\r\n\r\n3,w\n";
  const std::size_t size = text.size();
  text.append(64, '\0');
  const ChunkInput in{text.data(), text.data() + size, ',', 2, &plans, &slot, detected_simd_level()};
  const ChunkResult fast = parse_chunk(in), slow = parse_chunk_scalar(in);
  ASSERT_EQ(fast.status, ChunkStatus::ok);
  EXPECT_TRUE(fast.used_fast_path);
  EXPECT_EQ(fast.rows, 3u);
  EXPECT_EQ(fast.newlines, 6u);
  EXPECT_EQ(slow.newlines, 6u);
}

TEST(ScanStructural, ANonDigitAnywhereInAShortIntegerMakesTheColumnText) {
  for (const char bad : {'/', ':', 'a', ' ', '.', '\x80'})
    for (std::size_t length = 2; length <= 9; ++length)
      for (std::size_t at = 0; at < length; ++at) {
        std::string f(length, '4');
        f[at] = bad;
        if (bad == '.' || (bad == ' ' && (at == 0 || at + 1 == length))) continue;  // a float; trimmed?
        const ChunkResult r = read_integers({"12", f, "3"});
        ASSERT_EQ(r.status, ChunkStatus::widened) << f;
        ASSERT_EQ(r.table.column(0).type, ColumnType::str) << f;
        EXPECT_EQ(r.table.column(0).string(1), f);
      }
}

TEST(ScanStructural, CleanChunksTakeTheFastPathAndLiteralQuotesTheScalarOne) {
  std::vector<ColumnPlan> plans{{1, "b", ColumnType::str, false}};
  std::vector<int> slot{-1, 0};
  auto run = [&](std::string text) {
    text.append(64, '\0');
    const ChunkInput in{text.data(), text.data() + text.size() - 64, ',', 2, &plans, &slot, detected_simd_level()};
    return parse_chunk(in);
  };
  const ChunkResult clean = run("1,\"x,\"\"y\"\"\"\n2,z\r\n");
  EXPECT_TRUE(clean.used_fast_path);
  EXPECT_EQ(clean.table.column(0).string(0), "x,\"y\"");
  EXPECT_EQ(clean.table.column(0).string(1), "z");
  const ChunkResult literal = run("1,37\"N\n2,z\n");
  EXPECT_FALSE(literal.used_fast_path);
  EXPECT_EQ(literal.status, ChunkStatus::ok);
  EXPECT_EQ(literal.table.column(0).string(0), "37\"N");
}

// The table reader's splitter: a quote with no delimiter, line end or quote beside it is plainly
// literal and sends the split to the field walk, which cuts where a sequential read does.
TEST(CsvSplit, PlainlyLiteralQuotesAreSeenAndTheWalkCutsAtRecords) {
  const std::string t = "a,\"b\"\"c\",\"\"\nx\"y,\"p\nq\",z\"\n";
  const char* b = t.data();
  const char* e = b + t.size();
  EXPECT_FALSE(count_quotes(b, b + 12, b, e, ',').literal);  // opening, doubled, closing, empty
  EXPECT_EQ(count_quotes(b, b + 12, b, e, ',').quotes, 6u);
  EXPECT_TRUE(count_quotes(b + 12, e, b, e, ',').literal);   // x"y
  EXPECT_FALSE(count_quotes(b + 16, e, b, e, ',').literal);  // z" could close a field
  for (std::size_t piece : {1, 2, 5, 100}) {
    const auto walked = split_walking(b, e, piece, ',');
    const Split split = split_records(b, e, piece, 2, ',');
    EXPECT_EQ(split.walked, piece < 12) << piece;  // x"y is seen where the text is cut in pieces
    EXPECT_EQ(walked, split.starts) << piece;
    for (const char* s : walked) EXPECT_TRUE(s == b || s == b + 12 || s == e) << piece << " " << s - b;
  }
}

// The delimiter is counted outside quoted fields as the dialect reads them: a quote inside a
// field is a literal byte and opens nothing (parity would have hidden the rest of the header).
TEST(CsvDelimiter, QuotesOpenOnlyAtAFieldStart) {
  const auto detect = [](std::string_view s) { return tandem::csv::detect_delimiter(s.data(), s.data() + s.size()); };
  EXPECT_EQ(detect("in\"\tb\tc\n1,5\t2\t3\n"), '\t');   // a literal quote in a tab header
  EXPECT_EQ(detect("a,\"x\ty\tz\",b\n"), ',');          // tabs inside a quoted field
  EXPECT_EQ(detect("\"a\"\"\t\tb\",c\td\te\n"), '\t');  // "" inside a quoted field
  EXPECT_EQ(detect("a,b\n\t\t\t\n"), ',');              // only the header counts
  EXPECT_EQ(detect(""), ',');
  const auto t = tandem::read_csv_text("size\"\tname\tv\n5\"\tdisk, big\t1\n");
  ASSERT_EQ(t.num_columns(), 3u);
  EXPECT_EQ(t.column(0).name, "size\"");
  EXPECT_EQ(t.column(1).string(0), "disk, big");
}

// A file cut into byte ranges at random places (inside quoted fields, between the quotes of a
// doubled pair, on literal quotes): composing the ranges' transitions from `outside` gives each
// range's start state, and the first record start found from it is the one a walk of the whole
// file finds after the cut.
TEST(CsvSplitRanges, TransitionsFindTheRecordStartsOfOneWalk) {
  std::mt19937_64 rng(4343);
  const char* fields[] = {"ab", "a\"b", "37\"N", "\"x,\"\"y\"\"\nz\"", "", "\"\"", "\"a\nb\"", "\"\"\"\"", "x\"\"y"};
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int records = 1 + static_cast<int>(rng() % 12);
    for (int r = 0; r < records; ++r) {
      for (int f = 0; f < 3; ++f) text += std::string(f ? "," : "") + fields[rng() % std::size(fields)];
      text += "\n";
    }
    std::vector<std::size_t> starts;  // just after each line feed outside quotes, one walk
    tandem::csv::walk_outside_quotes(text.data(), text.data() + text.size(), ',', [&](const char* p, const char* q) {
      for (const char* x = p; x < q; ++x)
        if (*x == '\n') starts.push_back(static_cast<std::size_t>(x - text.data()) + 1);
      return true;
    });
    std::vector<std::size_t> cuts = {0};
    for (int c = 0; c < 4; ++c) cuts.push_back(rng() % (text.size() + 1));
    cuts.push_back(text.size());
    std::sort(cuts.begin(), cuts.end());
    auto state = tandem::CsvQuoteState::outside;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      const std::string_view range(text.data() + cuts[i], cuts[i + 1] - cuts[i]);
      const char before = cuts[i] == 0 ? '\n' : text[cuts[i] - 1];
      const auto it = std::lower_bound(starts.begin(), starts.end(), cuts[i] + 1);
      const std::size_t want = it != starts.end() && *it <= cuts[i + 1] ? *it - cuts[i] : range.size() + 1;
      ASSERT_EQ(tandem::csv_first_record_start(range, before, ',', state), want)
          << "round " << round << " range " << i << " of " << testing::PrintToString(text);
      state = tandem::csv_quote_transitions(range, before, ',')[static_cast<std::size_t>(state)];
    }
  }
}
