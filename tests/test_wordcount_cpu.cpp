// The CPU word count's parts against the plain definitions: the mask tokenizer against
// for_each_word on every chunking, the table's keys and hash ranges, and cpu_wordcount against a
// std::map count (chunk edges, long words, table growth, thread counts, output order). Texts live
// in exactly sized heap buffers so that AddressSanitizer sees any read past the end.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/zeroed_block_pool.hpp"
#include "mapreduce/cpu_wordcount.hpp"
#include "mapreduce/word_order.hpp"
#include "mapreduce/word_scan.hpp"
#include "mapreduce/word_table.hpp"
#include "tandem/mapreduce.hpp"

using namespace tandem;
using namespace tandem::mapreduce::detail;

namespace {

using Words = std::vector<std::pair<std::size_t, std::size_t>>;  // begin, length

// The words of chunk [first, last) by the tokenizer under test and by for_each_word.
template <WordMaskFn Mask = word_mask64>
Words scanned(const std::vector<char>& t, std::size_t first, std::size_t last) {
  Words w;
  scan_words<Mask>(t.data(), t.size(), first, last, [&](std::size_t b, std::size_t n) { w.emplace_back(b, n); });
  // The same words through a callback that is told where 16 bytes may be read from a word's start.
  Words told;
  scan_words<Mask>(t.data(), t.size(), first, last, [&](std::size_t b, std::size_t n, auto readable16) {
    if (decltype(readable16)::value) {
      EXPECT_GE(t.size() - b, 16u) << "word at " << b;
    }
    told.emplace_back(b, n);
  });
  EXPECT_EQ(told, w);
  return w;
}
Words reference(const std::vector<char>& t, std::size_t first, std::size_t last) {
  Words w;
  mapreduce::for_each_word(t.data(), t.size(), first, last,
                           [&](std::size_t b, std::size_t n) { w.emplace_back(b, n); });
  return w;
}

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Text of words from `alphabet` (lengths 1..max_len) and separators, with some bytes >= 0x80.
std::vector<char> random_text(std::size_t n, std::size_t max_len, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const std::string word_bytes = "abcXYZ019'_\xc3\xa9\xff\x80";
  const std::string separators = " \n\t,.-\x01\x7f";
  std::vector<char> t;
  while (t.size() < n) {
    const std::size_t len = 1 + rng() % max_len;
    for (std::size_t i = 0; i < len && t.size() < n; ++i) t.push_back(word_bytes[rng() % word_bytes.size()]);
    const std::size_t gap = 1 + rng() % 3;
    for (std::size_t i = 0; i < gap && t.size() < n; ++i) t.push_back(separators[rng() % separators.size()]);
  }
  return t;
}

// A slot's word: the key's bytes, or (a long key) its copy's.
std::string slot_word(const WordSlot& s) {
  if (!s.key.is_short()) return {s.bytes, s.key.length()};
  char b[16];
  std::memcpy(b, &s.key.k0, 8);
  std::memcpy(b + 8, &s.key.k1, 8);
  return {b, s.key.length()};
}

std::map<std::string, std::uint64_t> reference_counts(const std::vector<char>& t) {
  std::map<std::string, std::uint64_t> m;
  mapreduce::for_each_word(t.data(), t.size(), 0, t.size(),
                           [&](std::size_t b, std::size_t n) { ++m[std::string(t.data() + b, n)]; });
  return m;
}

std::vector<std::pair<std::string, std::uint64_t>> count(const std::vector<char>& t, int threads, std::size_t chunk,
                                                         CpuWordCountStats* stats = nullptr,
                                                         WordScanIsa isa = best_word_scan_isa()) {
  CpuWordCountStats st;
  auto out = cpu_wordcount(std::string_view(t.data(), t.size()), threads, chunk, st, isa);
  if (stats) *stats = st;
  return out;
}

// cpu_wordcount's words are the reference's, each once, in sort_word_counts order.
void expect_counts(const std::vector<char>& t, int threads, std::size_t chunk) {
  CpuWordCountStats st;
  const auto got = count(t, threads, chunk, &st);
  const auto want = reference_counts(t);
  const std::map<std::string, std::uint64_t> as_map(got.begin(), got.end());
  EXPECT_EQ(as_map.size(), got.size()) << "a word came out twice";
  EXPECT_EQ(as_map, want) << threads << " threads, chunks of " << chunk;
  auto sorted = got;
  mapreduce::sort_word_counts(sorted);
  EXPECT_EQ(got, sorted);
  std::uint64_t total = 0;
  for (const auto& [w, c] : want) total += c;
  EXPECT_EQ(st.words, total);
}

}  // namespace

TEST(WordScan, MaskEqualsTheByteRuleForEveryByte) {
  std::vector<char> block(64);
  for (int c = 0; c < 256; ++c) {
    for (int at : {0, 15, 16, 31, 47, 63}) {
      std::fill(block.begin(), block.end(), 'a');
      block[at] = static_cast<char>(c);
      const std::uint64_t m = word_mask64(block.data());
      EXPECT_EQ(m, word_mask64_table(block.data())) << "byte " << c;
      EXPECT_EQ((m >> at) & 1, mapreduce::is_word_byte(static_cast<unsigned char>(c)) ? 1u : 0u) << "byte " << c;
    }
  }
}

// Every (first, last) of short texts and chunkings of long ones: the words the tokenizer with
// this classifier finds are for_each_word's.
template <WordMaskFn Mask>
void expect_every_chunking_gives_for_each_words_words() {
  std::vector<std::vector<char>> texts{bytes(""),
                                       bytes(" "),
                                       bytes("a"),
                                       bytes(" ,.\n\t!"),
                                       bytes("word"),
                                       bytes(std::string(200, 'x')),
                                       bytes(std::string(" ").append(130, 'y').append(" z"))};
  for (std::uint32_t seed = 1; seed <= 4; ++seed) texts.push_back(random_text(700, seed == 4 ? 150 : 12, seed));
  for (const auto& t : texts) {
    const std::size_t n = t.size();
    // Every (first, last) pair of a short text; chunkings of a long one.
    if (n <= 200) {
      for (std::size_t first = 0; first <= n; ++first)
        for (std::size_t last = first; last <= n; ++last)
          ASSERT_EQ(scanned<Mask>(t, first, last), reference(t, first, last)) << "chunk " << first << ".." << last;
      continue;
    }
    for (std::size_t chunk : {1, 2, 3, 63, 64, 65, 100, 128, 129, 700}) {
      Words all, want;
      for (std::size_t first = 0; first < n; first += chunk) {
        const std::size_t last = std::min(n, first + chunk);
        const Words w = scanned<Mask>(t, first, last);
        ASSERT_EQ(w, reference(t, first, last)) << "chunk " << first << ".." << last;
        all.insert(all.end(), w.begin(), w.end());
      }
      ASSERT_EQ(all, reference(t, 0, n)) << "chunks of " << chunk;
    }
  }
}

TEST(WordScan, EveryChunkingGivesForEachWordsWords) { expect_every_chunking_gives_for_each_words_words<word_mask64>(); }

#if TANDEM_WORD_MASK_AVX2
TEST(WordScan, Avx2MaskEqualsTheByteRuleForEveryByte) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  std::vector<char> block(64);
  for (char background : {'a', ' '})
    for (int c = 0; c < 256; ++c)
      for (int at : {0, 15, 16, 31, 32, 47, 63}) {
        std::fill(block.begin(), block.end(), background);
        block[at] = static_cast<char>(c);
        EXPECT_EQ(word_mask64_avx2(block.data()), word_mask64_table(block.data())) << "byte " << c << " at " << at;
      }
}

TEST(WordScan, Avx2EveryChunkingGivesForEachWordsWords) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  expect_every_chunking_gives_for_each_words_words<word_mask64_avx2>();
}
#endif

TEST(WordTable, KeysTellWordsAndLengthsApart) {
  const std::vector<char> t = bytes("a ab abcdefgh abcdefghi abcdefghijklmnop abcdefghijklmnopq abcdefghijklmnopr " +
                                    std::string(300, 'q') + " " + "x\xc3\xa9");
  std::set<std::pair<std::uint64_t, std::uint64_t>> keys;
  mapreduce::for_each_word(t.data(), t.size(), 0, t.size(), [&](std::size_t b, std::size_t n) {
    const WordKey k = word_key(t.data(), t.size(), b, n);
    EXPECT_EQ(k.length(), n);
    EXPECT_EQ(k.is_short(), n <= kShortWord);
    EXPECT_TRUE(keys.insert({k.k0, k.k1}).second) << "two words with one key";
  });
  EXPECT_EQ(keys.size(), 9u);
  EXPECT_EQ(keys.count({0, 0}), 0u) << "a word's key is zero: the table's empty slots hold zero keys";
  // The same word near the end of the text (fewer than 16 bytes left to read) has the same key.
  const std::vector<char> end = bytes("ab abcdefghi ab abcdefghi");
  const WordKey a = word_key(end.data(), end.size(), 3, 9), b = word_key(end.data(), end.size(), 16, 9);
  EXPECT_EQ(a, b);
  EXPECT_EQ(word_key(end.data(), end.size(), 0, 2), word_key(end.data(), end.size(), 13, 2));
}

TEST(WordTable, ShortKeysAreTheSameWithOrWithoutBytesToSpareAfterTheWord) {
  // The usual key reads 16 bytes from the word's start and masks them by length; at the end of
  // the text it reads only the word's bytes. Every length, every byte position of the mask.
  const std::string word = "abcdefghijklmnop";
  for (std::size_t len = 1; len <= kShortWord; ++len) {
    const std::vector<char> spare = bytes(word.substr(0, len) + std::string(20, 'z')),
                            exact = bytes(word.substr(0, len));
    const WordKey k = word_key(spare.data(), spare.size(), 0, len);
    EXPECT_EQ(k, word_key(exact.data(), exact.size(), 0, len)) << "length " << len;
    EXPECT_EQ(k.length(), len);
  }
}

TEST(WordTable, DrainedHashRangesHoldEveryWordOnceAndLeaveTheTableEmpty) {
  const std::vector<char> t = random_text(20000, 24, 11);  // short, inline-key and hashed-key words
  const auto want = reference_counts(t);
  for (int load_quarters : {2, 3})      // doubling at half load (all tables) and at 3/4 (long words)
    for (bool counted : {false, true})  // the ranges counted as words came in, or by the drain
      for (std::size_t parts = 1; parts <= 4096; parts *= 4) {
        WordCopies copies({t.data(), t.size()});
        WordTable table(16, 0, load_quarters, &copies);  // grows many times
        if (counted && parts > 1) table.count_ranges(parts);
        mapreduce::for_each_word(t.data(), t.size(), 0, t.size(),
                                 [&](std::size_t b, std::size_t n) { table.add_word(t.data(), t.size(), b, n); });
        EXPECT_GT(table.grows(), 3u);
        ASSERT_EQ(table.size(), want.size());
        EXPECT_LE(table.size() * 4, table.capacity() * std::size_t(load_quarters));
        const RangedWords<WordSlot> ranges = table.drain_by_range(parts);
        ASSERT_EQ(ranges.size(), want.size());
        std::map<std::string, std::uint64_t> got;
        for (std::size_t p = 0; p < parts; ++p)
          for (const WordSlot& s : ranges.range(p)) {
            if (parts > 1) {
              EXPECT_EQ(s.key.hash() >> (64 - std::countr_zero(parts)), p);
            }
            EXPECT_TRUE(got.emplace(slot_word(s), s.count).second) << "seen twice";
          }
        EXPECT_EQ(got, want) << parts << " ranges, load " << load_quarters << "/4, counted " << counted;
        EXPECT_EQ(table.size(), 0u);
        for (std::size_t i = 0; i < table.capacity(); ++i) ASSERT_FALSE(table.slot(i).used()) << "slot " << i;
      }
}

TEST(WordTable, RecurringLongWordsAreKeptAsCopiesThatOutliveTheText) {
  // Long words met three times each (one of 40,000 bytes, more than a block of copies) counted
  // from a buffer that is then overwritten: the table's words are still whole, each compared with
  // its copy from its second occurrence on.
  std::string s;
  for (int rep = 0; rep < 3; ++rep) {
    for (int i = 0; i < 3000; ++i) s.append("long_word_number_").append(std::to_string(i)).append(" ");
    s.append(std::string(40000, 'x')).append(" ");
  }
  std::vector<char> t = bytes(s);
  const auto want = reference_counts(t);
  WordCopies copies({t.data(), t.size()});
  WordTable table(16, 0, 3, &copies);
  mapreduce::for_each_word(t.data(), t.size(), 0, t.size(),
                           [&](std::size_t b, std::size_t n) { table.add_word(t.data(), t.size(), b, n); });
  std::fill(t.begin(), t.end(), '#');
  const RangedWords<WordSlot> words = table.drain_by_range(1);
  std::map<std::string, std::uint64_t> got;
  for (const WordSlot& w : words.range(0)) got.emplace(slot_word(w), w.count);
  EXPECT_EQ(got, want);
}

TEST(WordTable, LongWordsCompareEqualOnlyWhenEveryByteIs) {
  // same_bytes reads 8 bytes at a time and the last 8 where the word ends: a difference at any
  // place of any length is seen, and bytes past the word are not compared.
  for (std::size_t len = 9; len <= 40; ++len) {
    std::string a(len, 'w'), b(len, 'w');
    a += "xxxxxxxx";  // past the word: differs, not compared
    b += "yyyyyyyy";
    EXPECT_TRUE(same_bytes(a.data(), b.data(), len)) << len;
    for (std::size_t i = 0; i < len; ++i) {
      std::string c = b;
      c[i] = 'v';
      EXPECT_FALSE(same_bytes(a.data(), c.data(), len)) << len << " at " << i;
    }
  }
}

TEST(WordTable, InlineKeysTellWordsApartInTheirLastBytes) {
  // Words of at most 11 bytes are their own keys in 16-byte slots: the first 8 bytes, then bytes
  // 8..10 under the count. Words that differ only there, or only in length, stay apart, in a table
  // that starts at 16 slots and grows.
  const std::vector<std::string> words{"abcdefgh",
                                       "abcdefghi",
                                       "abcdefghij",
                                       "abcdefghijk",
                                       "abcdefghijz",
                                       "abcdefghizk",
                                       "abcdefghzjk",
                                       "zbcdefghijk",
                                       "a",
                                       "\xff\x80\xc3",
                                       "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"};
  std::string s;
  for (std::size_t i = 0; i < words.size(); ++i)
    for (std::size_t r = 0; r <= i; ++r) s += words[i] + " ";
  const std::vector<char> t = bytes(s + std::string(20, ' '));
  InlineWordTable table(16);
  mapreduce::for_each_word(t.data(), t.size(), 0, t.size(), [&](std::size_t b, std::size_t n) {
    ASSERT_LE(n, kInlineWord);
    const WordKey k = word_key(t.data(), t.size(), b, n);
    EXPECT_LT(k.k1, std::uint64_t{1} << 24);
    table.add(k.k0, k.k1);
  });
  EXPECT_GT(table.grows(), 0u);
  std::map<std::string, std::uint64_t> got;
  const RangedWords<InlineSlot> ranges = table.drain_by_range(4);
  for (std::size_t p = 0; p < 4; ++p)
    for (const InlineSlot& slot : ranges.range(p)) {
      EXPECT_EQ(slot.key().hash() >> 62, p);
      const WordKey k = slot.key();
      char buf[16];
      std::memcpy(buf, &k.k0, 8);
      std::memcpy(buf + 8, &k.k1, 8);
      EXPECT_TRUE(got.emplace(std::string(buf, k.length()), slot.count()).second) << "seen twice";
    }
  std::map<std::string, std::uint64_t> want;
  for (std::size_t i = 0; i < words.size(); ++i) want[words[i]] = i + 1;
  EXPECT_EQ(got, want);
}

TEST(WordTable, InlineTableGrowsFromTheSmallestStartAndKeepsCounts) {
  const std::vector<char> t = random_text(60000, 11, 12);
  InlineWordTable table(2);  // grows many times
  std::map<std::string, std::uint64_t> want;
  mapreduce::for_each_word(t.data(), t.size(), 0, t.size(), [&](std::size_t b, std::size_t n) {
    if (n > kInlineWord) return;
    const WordKey k = word_key(t.data(), t.size(), b, n);
    table.add(k.k0, k.k1);
    ++want[std::string(t.data() + b, n)];
  });
  EXPECT_GT(table.grows(), 8u);
  ASSERT_EQ(table.size(), want.size());
  std::map<std::string, std::uint64_t> got;
  const RangedWords<InlineSlot> all = table.drain_by_range(1);
  for (const InlineSlot& slot : all.range(0)) {
    const WordKey k = slot.key();
    char buf[16];
    std::memcpy(buf, &k.k0, 8);
    std::memcpy(buf + 8, &k.k1, 8);
    got.emplace(std::string(buf, k.length()), slot.count());
  }
  EXPECT_EQ(got, want);
}

TEST(WordTable, APooledTableStartsEmptyAfterAnotherUsedItsMemory) {
  const std::size_t cap = std::size_t{1} << 14;  // 512 KiB of slots: from the pool
  ASSERT_GE(cap * sizeof(WordSlot), kPooledSlotBytes);
  // A table given back sparse (its used slots cleared one by one), dense (every slot cleared) and
  // drained (already clear): each block comes back to the next table all zero.
  for (const char* how : {"sparse", "dense", "drained"}) {
    const bool sparse = how == std::string_view("sparse");
    const std::vector<char> t = random_text(sparse ? 2000 : 40000, 12, 3);
    std::size_t held = 0;  // by the pool while the table is in use
    {
      WordCopies copies({t.data(), t.size()});
      WordTable used(cap, 0, 2, &copies);
      held = held_zeroed_bytes();
      scan_words(t.data(), t.size(), 0, t.size(),
                 [&](std::size_t b, std::size_t n) { used.add_word(t.data(), t.size(), b, n); });
      ASSERT_EQ(used.grows(), 0u) << how;
      if (sparse) {
        ASSERT_LT(used.size() * 8, cap) << how;
      } else {
        ASSERT_GE(used.size() * 8, cap) << how;
      }
      if (how == std::string_view("drained")) {
        const std::size_t words = used.size();
        EXPECT_EQ(used.drain_by_range(8).size(), words);
      }
    }
    EXPECT_EQ(held_zeroed_bytes(), held + cap * sizeof(WordSlot)) << how;  // its block went back
    const WordTable fresh(cap);
    EXPECT_EQ(held_zeroed_bytes(), held) << how;  // and was taken again
    EXPECT_EQ(fresh.size(), 0u);
    for (std::size_t i = 0; i < cap; ++i) {
      const WordSlot& s = fresh.slot(i);
      ASSERT_TRUE(s.count == 0 && s.bytes == nullptr && s.key.k0 == 0 && s.key.k1 == 0) << how << ", slot " << i;
    }
  }
}

TEST(CpuWordCount, ThreadTablesComeBackToThePoolForTheNextCall) {
  std::string s;  // 1 MiB over 3,000 distinct words: the tables never grow
  for (int i = 0; s.size() < (std::size_t{1} << 20); ++i)
    s.append("w").append(std::to_string(i * 7 % 3000)).append(" ");
  const std::vector<char> t = bytes(s);
  CpuWordCountStats st;
  const auto first = count(t, 2, 0, &st);
  // Both of a thread's tables are large enough to come from the pool.
  ASSERT_GE(st.table_bytes, 2 * kPooledSlotBytes);
  ASSERT_EQ(st.table_grows, 0u);
  const std::size_t held = held_zeroed_bytes();
  EXPECT_GE(held, 2 * st.table_bytes);
  EXPECT_EQ(count(t, 2, 0), first);
  // The second call took the thread tables' blocks again and gave them back: had it mapped new
  // ones, the pool would hold two more thread tables now. It may hold one more merged range table
  // (64 KiB here): how many of those are live at once depends on how the threads race for ranges.
  const std::size_t after = held_zeroed_bytes();
  EXPECT_GE(after, held);
  EXPECT_LT(after - held, st.table_bytes);
}

TEST(CpuWordCount, TwoCallersAtOnceBothGetTheirOwnCounts) {
  const std::vector<char> a = random_text(1 << 20, 16, 21), b = random_text(1 << 20, 9, 22);
  const auto want_a = count(a, 1, 0), want_b = count(b, 1, 0);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::pair<std::string, std::uint64_t>> got_a, got_b;
    std::thread other([&] { got_b = count(b, 3, 0); });
    got_a = count(a, 2, 0);
    other.join();
    EXPECT_EQ(got_a, want_a) << "round " << round;
    EXPECT_EQ(got_b, want_b) << "round " << round;
  }
}

TEST(CpuWordCount, ManyThreadsSplitTheOutputSortIntoBuckets) {
  // Many distinct words, many of them tied in count, so buckets cut through runs of ties.
  std::string s;
  for (int i = 0; i < 60000; ++i) s.append("t").append(std::to_string(i % 9000)).append(i % 7 ? " " : "\n");
  const std::vector<char> t = bytes(s + " " + std::string(random_text(200000, 10, 4).data(), 200000));
  for (int threads : {2, 7, 16}) expect_counts(t, threads, 4096);
}

TEST(CpuWordCount, EmptySeparatorsAndOneWord) {
  EXPECT_TRUE(count({}, 2, 0).empty());
  EXPECT_TRUE(count(bytes(" ,.\n\t!\x01"), 2, 0).empty());
  using V = std::vector<std::pair<std::string, std::uint64_t>>;
  EXPECT_EQ(count(bytes("hello"), 2, 0), (V{{"hello", 1}}));
  EXPECT_EQ(count(bytes("  hello, "), 3, 1), (V{{"hello", 1}}));
  EXPECT_EQ(count(bytes("\xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9"), 2, 0), (V{{"\xc3\xa9t\xc3\xa9", 2}}));
}

TEST(CpuWordCount, WordsAcrossChunkEdgesAndLongerThanAChunk) {
  std::string s;
  for (int i = 0; i < 400; ++i) s += std::string(1 + i % 40, char('a' + i % 26)) + (i % 5 ? " " : ",\n");
  s += std::string(5000, 'L') + " tail " + std::string(5000, 'L') + " " + std::string(999, 'M');  // ends in a word
  const std::vector<char> t = bytes(s);
  for (int threads : {1, 2, 5})
    for (std::size_t chunk : {1, 7, 64, 65, 1000}) expect_counts(t, threads, chunk);
}

TEST(CpuWordCount, ManyDistinctWordsGrowTheTables) {
  std::string s;
  for (int i = 0; i < 150000; ++i) s.append("w").append(std::to_string(i * 7919 % 150001)).append(i % 3 ? " " : "\n");
  s += "w1 w1 w22 " + std::string(20, 'x') + " " + std::string(20, 'x');
  const std::vector<char> t = bytes(s);
  CpuWordCountStats st;
  const auto got = count(t, 3, 4096, &st);
  EXPECT_GT(st.table_grows, 0u);
  EXPECT_EQ(st.partitions, 16u);
  const std::map<std::string, std::uint64_t> as_map(got.begin(), got.end());
  EXPECT_EQ(as_map, reference_counts(t));
  EXPECT_EQ(got[0], (std::pair<std::string, std::uint64_t>{"w1", 3}));
}

TEST(CpuWordCount, ThreadCountsAndChunkSizesAgree) {
  const std::vector<char> t = random_text(300000, 24, 5);
  const auto one = count(t, 1, 0);
  const std::map<std::string, std::uint64_t> as_map(one.begin(), one.end());
  EXPECT_EQ(as_map, reference_counts(t));
  for (int threads : {2, 3, 4, 8})
    for (std::size_t chunk : {std::size_t{0}, std::size_t{777}, std::size_t{1} << 16})
      EXPECT_EQ(count(t, threads, chunk), one) << threads << " threads, chunks of " << chunk;
}

TEST(CpuWordCount, Avx2AndBaselineLoopsCountAlike) {
  if (best_word_scan_isa() != WordScanIsa::avx2) GTEST_SKIP() << "this CPU has no AVX2";
  std::string s;
  for (int i = 0; i < 3000; ++i) s += std::string(1 + i % 40, char('a' + i % 26)) + (i % 5 ? " " : ",\n");
  const std::vector<char> long_words = bytes(s + std::string(5000, 'L') + " x");
  for (const auto& t : {random_text(300000, 24, 5), long_words})
    for (int threads : {1, 3})
      for (std::size_t chunk : {std::size_t{0}, std::size_t{777}}) {
        CpuWordCountStats st;
        const auto avx2 = count(t, threads, chunk, &st, WordScanIsa::avx2);
        EXPECT_EQ(st.isa, WordScanIsa::avx2);
        EXPECT_EQ(avx2, count(t, threads, chunk, nullptr, WordScanIsa::baseline)) << threads << " threads, " << chunk;
        const std::map<std::string, std::uint64_t> as_map(avx2.begin(), avx2.end());
        EXPECT_EQ(as_map, reference_counts(t));
      }
}

TEST(CpuWordCount, TiesSortByBytesBeyondTheFirstEight) {
  // Same counts; words sharing their first 8 bytes, prefixes of each other, bytes >= 0x80.
  const std::vector<char> t = bytes("abcdefghZ abcdefghA abcdefgh abcdefg abcdefghAB \xc3\xa9 b B " +
                                    std::string(30, 'k') + "b " + std::string(30, 'k') + "a");
  using V = std::vector<std::pair<std::string, std::uint64_t>>;
  const V want{{"B", 1},
               {"abcdefg", 1},
               {"abcdefgh", 1},
               {"abcdefghA", 1},
               {"abcdefghAB", 1},
               {"abcdefghZ", 1},
               {"b", 1},
               {std::string(30, 'k') + "a", 1},
               {std::string(30, 'k') + "b", 1},
               {"\xc3\xa9", 1}};
  EXPECT_EQ(count(t, 1, 0), want);
  EXPECT_EQ(count(t, 2, 8), want);
}

TEST(CpuWordCount, ManyDistinctLongWordsGrowTheLongTables) {
  // 12 to 40 bytes: the long-word tables (inline keys up to 16 bytes, hashed keys beyond) start
  // small for this text and grow, and the merge confirms hashed keys in the text.
  std::string s;
  for (int i = 0; i < 60000; ++i) {
    const std::string w = "longword_" + std::to_string(i * 7919 % 60007);
    s.append(w).append(std::string(i % 29, char('a' + i % 26))).append(i % 4 ? " " : "\n");
  }
  const std::vector<char> t = bytes(s);
  CpuWordCountStats st;
  const auto got = count(t, 4, 8192, &st);
  EXPECT_GT(st.table_grows, 0u);
  const std::map<std::string, std::uint64_t> as_map(got.begin(), got.end());
  EXPECT_EQ(as_map.size(), got.size());
  EXPECT_EQ(as_map, reference_counts(t));
  auto sorted = got;
  mapreduce::sort_word_counts(sorted);
  EXPECT_EQ(got, sorted);
}

TEST(CpuWordCount, OneWordRepeatedMillionsOfTimes) {
  for (const std::string& w : std::vector<std::string>{"the", "abcdefghijk", "abcdefghijkl", std::string(40, '\xe9')}) {
    std::string s;
    const std::size_t times = w.size() < 12 ? 3000000 : 400000;
    s.reserve(times * (w.size() + 1));
    for (std::size_t i = 0; i < times; ++i) s.append(w).push_back(i % 3 ? ' ' : '\n');
    const std::vector<char> t = bytes(s);
    for (int threads : {1, 3}) {
      CpuWordCountStats st;
      const auto got = count(t, threads, 0, &st);
      ASSERT_EQ(got.size(), 1u) << w.size() << " bytes, " << threads << " threads";
      EXPECT_EQ(got[0].first, w);
      EXPECT_EQ(got[0].second, times);
      EXPECT_EQ(st.words, times);
    }
  }
}

TEST(CpuWordCount, WordsOfEveryLengthNearTheEndOfTheText) {
  // A word's key reads 16 bytes from its start where the text has them: words of 1 to 20 bytes
  // ending the text, or a few bytes before its end, counted as the reference counts them.
  for (std::size_t len = 1; len <= 20; ++len)
    for (std::size_t tail = 0; tail < 20; tail += 3) {
      std::string s;
      for (int i = 0; i < 40; ++i) s += std::string(1 + (i * 7 + len) % 20, char('a' + i % 5)) + " ";
      s += std::string(len, 'q') + " " + std::string(len, 'q') + std::string(tail, ' ');
      const std::vector<char> t = bytes(s);
      for (int threads : {1, 2})
        for (std::size_t chunk : {std::size_t{0}, std::size_t{7}, std::size_t{64}}) {
          const auto got = count(t, threads, chunk);
          const std::map<std::string, std::uint64_t> as_map(got.begin(), got.end());
          ASSERT_EQ(as_map, reference_counts(t)) << len << " bytes, " << tail << " spaces after";
        }
    }
}

TEST(CpuWordCount, TiesAcrossTheInlineAndLongTables) {
  // Words of 8 to 24 bytes sharing their first 8 or 16 bytes, each once: the output orders them
  // by bytes whether a record holds the word (up to 16 bytes) or points into the text.
  const std::string base = "abcdefghijklmnop";  // 16 bytes
  std::vector<std::string> words;
  for (std::size_t len = 8; len <= 16; ++len) words.push_back(base.substr(0, len));
  for (const char* tail : {"a", "z", "\x80", "aa", "zzzzzzzz"}) words.push_back(base + tail);
  words.push_back("abcdefghijklmnoZ");
  words.push_back("abcdefghijkZ");
  words.push_back("abcdefghZ");
  std::string s;
  for (std::size_t i = 0; i < words.size(); ++i) s += words[(i * 5) % words.size()] + (i % 2 ? " " : "\n");
  const std::vector<char> t = bytes(s);
  std::vector<std::pair<std::string, std::uint64_t>> want;
  for (const auto& w : words) want.emplace_back(w, 1);
  mapreduce::sort_word_counts(want);
  for (int threads : {1, 2, 5}) EXPECT_EQ(count(t, threads, 16), want) << threads << " threads";
}

TEST(WordOrder, OrderKeysNeverDecreaseAlongThePrintOrder) {
  // Counts around the 16-bit field's top (65,535 and more all key 0) and words sharing prefixes.
  std::vector<std::pair<std::string, std::uint64_t>> v;
  const std::uint64_t counts[] = {1, 2, 255, 256, 65533, 65534, 65535, 65536, 1u << 20};
  for (const char* w : {"a", "ab", "abcdef", "abcdefg", "abcdefgh", "abcdefgz", "abcdez", "b", "\xff\xff"})
    for (std::uint64_t c : counts) v.emplace_back(w, c);
  mapreduce::sort_word_counts(v);
  for (std::size_t i = 1; i < v.size(); ++i) {
    const auto key = [](const std::pair<std::string, std::uint64_t>& e) {
      return word_order_key(e.second, word_prefix(e.first));
    };
    EXPECT_LE(key(v[i - 1]), key(v[i])) << v[i - 1].first << " x" << v[i - 1].second << " then " << v[i].first << " x"
                                        << v[i].second;
  }
  EXPECT_EQ(word_order_key(65535, word_prefix("a")), 0u);
  EXPECT_GT(word_order_key(65534, word_prefix("a")), 0u);
}

TEST(CpuWordCount, FamiliesOfWordsTiedInCountAndPrefixAndVeryFrequentWords) {
  // Identifier families (equal counts, shared prefixes of 6 to 20 bytes, words both within and
  // beyond 16 bytes) and words of 65,535 occurrences and more, whose order keys all tie: the
  // radix sort's ties are ordered as words, in ranges and in buckets of few and of many pieces.
  std::vector<std::string> words;
  for (const char* stem : {"shared", "sharedlib", "shared_library_", "static_vec", "abcdefghijklmnopq"})
    for (const char* tail : {"", "a", "b", "_x", "_y", "zz", "\xc3\xa9", "_concurrent_load_test"})
      words.push_back(std::string(stem) + tail);
  std::string s;
  for (int rep = 0; rep < 7; ++rep)
    for (std::size_t i = 0; i < words.size(); ++i) s += words[(i * 11 + rep) % words.size()] + (i % 3 ? " " : "\n");
  for (int i = 0; i < 140000; ++i) s += i % 2 ? "the " : "of ";  // 70,000 each: tied, key 0
  for (int i = 0; i < 66000; ++i) s += "and ";
  const std::vector<char> t = bytes(s + std::string(random_text(300000, 14, 9).data(), 300000));
  for (int threads : {1, 2, 3, 16}) expect_counts(t, threads, 4096);
}

TEST(CpuWordCount, WordcountUsesItAndKeepsTheCounts) {
  const std::vector<char> t = random_text(100000, 20, 9);
  mapreduce::WordCountOptions o;
  o.engine.device = Device::cpu;
  o.engine.threads = 2;
  const auto r = mapreduce::wordcount(std::string_view(t.data(), t.size()), o);
  EXPECT_EQ(r.words, count(t, 2, 0));
  std::uint64_t total = 0;
  for (const auto& [w, c] : reference_counts(t)) total += c;
  EXPECT_EQ(r.total_words, total);
  bool named = false;
  for (const auto& s : r.report.stages) named |= s.name == "CPU count words";
  EXPECT_TRUE(named);
}
