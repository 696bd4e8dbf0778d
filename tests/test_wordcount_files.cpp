// Word count of files: the joined text's pieces (which file bytes and newlines fill an upload
// slot), io::SizedFile's reads, wordcount_files against wordcount of the joined text, errors that
// name the file, and the parallel output sort against the one-thread sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "mapreduce/joined_files.hpp"
#include "mapreduce/word_order.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/mapreduce.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string joined(const std::vector<std::string>& parts) {
  std::string t;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) t += '\n';
    t += parts[i];
  }
  return t;
}

}  // namespace

TEST(JoinedFiles, EveryRangeOfEverySlotSizeRebuildsTheJoinedText) {
  const std::vector<std::vector<std::string>> cases = {
      {"abc"}, {"a", "b"}, {"", "xy", ""}, {"hello", "", "", "world!"}, {"0123456789", "ab", "c", "defghij"}};
  for (const auto& parts : cases) {
    std::vector<std::uint64_t> sizes;
    for (const auto& p : parts) sizes.push_back(p.size());
    const mapreduce::detail::JoinedFiles j(sizes);
    const std::string want = joined(parts);
    ASSERT_EQ(j.size(), want.size());
    for (std::uint64_t slot = 1; slot <= want.size() + 1; ++slot) {
      std::string got(want.size(), '?');
      for (std::uint64_t off = 0; off < want.size(); off += slot) {
        const std::uint64_t len = std::min<std::uint64_t>(slot, want.size() - off);
        std::uint64_t filled = 0;
        j.split(
            off, len,
            [&](std::size_t f, std::uint64_t at, std::uint64_t to, std::uint64_t bytes) {
              ASSERT_LE(to + bytes, len);
              ASSERT_LE(at + bytes, parts[f].size());
              got.replace(off + to, bytes, parts[f], at, bytes);
              filled += bytes;
            },
            [&](std::uint64_t to) {
              ASSERT_LT(to, len);
              got[off + to] = '\n';
              ++filled;
            });
        EXPECT_EQ(filled, len) << "slot " << slot << " at " << off;
      }
      EXPECT_EQ(got, want) << "slot " << slot;
    }
  }
}

TEST(SizedFile, ReadsRangesAndRefusesWhatLiesOutside) {
  TempDir dir;
  const std::string path = dir.file("t.txt");
  std::string bytes(100000, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = char('a' + i % 26);
  write_file(path, bytes);
  io::SizedFile f(path);
  EXPECT_EQ(f.size(), bytes.size());
  EXPECT_EQ(f.name(), path);
  std::string got(5000, '?');
  f.read(got.data(), got.size(), 77777, 3);
  EXPECT_EQ(got, bytes.substr(77777, 5000));
  f.read(got.data(), 0, bytes.size(), 1);  // an empty read at the end is fine
  EXPECT_THROW(f.read(got.data(), 2, bytes.size() - 1, 1), UsageError);
  EXPECT_THROW(io::SizedFile(dir.file("missing.txt")), InputError);
  EXPECT_THROW(io::SizedFile(dir.path.string()), InputError);  // a directory
  write_file(dir.file("empty.txt"), "");
  EXPECT_THROW(io::SizedFile(dir.file("empty.txt")), InputError);
}

TEST(WordCountFiles, SameAsTheJoinedTextWithNoWordAcrossFiles) {
  TempDir dir;
  // "end" of one file and "start" of the next must stay two words; an empty file adds a newline.
  const std::vector<std::string> parts = {"The cat and the end", "start The CAT", "", "x\n", "tail"};
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    paths.push_back(dir.file(fmt::format("f{}.txt", i)));
    write_file(paths.back(), parts[i]);
  }
  for (bool lower : {false, true}) {
    mapreduce::WordCountOptions o;
    o.lowercase = lower;
    o.engine.threads = 2;
    const auto want = mapreduce::wordcount(joined(parts), o);
    const auto got = mapreduce::wordcount_files(paths, o);
    EXPECT_EQ(got.words, want.words) << "lowercase " << lower;
    EXPECT_EQ(got.total_words, want.total_words);
    ASSERT_FALSE(got.report.stages.empty());
    EXPECT_EQ(got.report.stages.front().name, "read input");
  }
  const auto one = mapreduce::wordcount_files({paths[0]});
  EXPECT_EQ(one.total_words, 5u);
  // One file on the CPU is counted in its mapped pages; an empty one is read (nothing to map).
  mapreduce::WordCountOptions cpu;
  cpu.engine.device = Device::cpu;
  cpu.engine.threads = 2;
  for (bool lower : {false, true}) {
    cpu.lowercase = lower;
    const auto got = mapreduce::wordcount_files({paths[1]}, cpu);
    EXPECT_EQ(got.words, mapreduce::wordcount(parts[1], cpu).words) << "lowercase " << lower;
    ASSERT_FALSE(got.report.stages.empty());
    EXPECT_EQ(got.report.stages.front().name, "read input");  // inputs are read, never mapped (docs/io.md)
  }
  const auto empty = mapreduce::wordcount_files({paths[2]}, cpu);
  EXPECT_TRUE(empty.words.empty());
  EXPECT_EQ(empty.total_words, 0u);
  EXPECT_EQ(empty.report.stages.front().name, "read input");
}

TEST(WordCountFiles, ErrorsNameTheFile) {
  TempDir dir;
  const std::string ok = dir.file("ok.txt"), missing = dir.file("missing.txt");
  write_file(ok, "a b c");
  try {
    mapreduce::wordcount_files({ok, missing});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  EXPECT_THROW(mapreduce::wordcount_files({}), UsageError);
  EXPECT_THROW(mapreduce::wordcount_files({dir.path.string()}), InputError);
}

TEST(WordCountSort, NoEntryOneEntryAndEqualEntries) {
  for (int threads : {1, 4}) {
    std::vector<std::pair<std::string, std::uint64_t>> v;
    mapreduce::sort_word_counts(v, threads);
    EXPECT_TRUE(v.empty());
    EXPECT_TRUE(mapreduce::detail::word_count_order({}, {}, threads).empty());
    v = {{"only", 7}};
    mapreduce::sort_word_counts(v, threads);
    EXPECT_EQ(v, (std::vector<std::pair<std::string, std::uint64_t>>{{"only", 7}}));
    v = {{"same", 2}, {"", 0}, {"same", 2}, {std::string(1, '\0'), 0}};  // an empty word sorts first
    mapreduce::sort_word_counts(v, threads);
    EXPECT_EQ(v, (std::vector<std::pair<std::string, std::uint64_t>>{
                     {"same", 2}, {"same", 2}, {"", 0}, {std::string(1, '\0'), 0}}));
  }
}

TEST(WordCountSort, LongRunsOfTiedKeysAreOrderedAsWords) {
  // The order (the GPU word count's, and sort_word_counts' on one thread) sorts keys of (count,
  // first 6 bytes) and then compares words only within runs of equal keys: here runs longer than a
  // thread's piece (one family of 70,000 words of equal count and prefix, and 40,000 words of
  // 65,535 occurrences or more, whose keys are all 0) beside many short runs, on 1 to 8 threads,
  // against a comparison sort of the pairs.
  std::mt19937_64 rng(9);
  std::vector<std::pair<std::string, std::uint64_t>> v;
  for (int i = 0; i < 70000; ++i) v.emplace_back(fmt::format("family{}", rng() % 1000000), 3);
  for (int i = 0; i < 40000; ++i) v.emplace_back(fmt::format("w{}", rng() % 100000), 65535 + rng() % 3);
  for (int i = 0; i < 50000; ++i) v.emplace_back(fmt::format("abcdef{}", char('a' + rng() % 26)), 1 + rng() % 4);
  std::shuffle(v.begin(), v.end(), rng);
  auto want = v;
  std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string_view> words;
  std::vector<std::uint64_t> counts;
  for (const auto& [w, c] : v) {
    words.push_back(w);
    counts.push_back(c);
  }
  for (int threads : {1, 2, 3, 8}) {
    const std::vector<std::size_t> order = mapreduce::detail::word_count_order(words, counts, threads);
    ASSERT_EQ(order.size(), v.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      ASSERT_EQ(v[order[i]], want[i]) << "place " << i << ", " << threads << " threads";
    auto got = v;
    mapreduce::sort_word_counts(got, threads);
    EXPECT_EQ(got, want) << threads << " threads";
  }
}

TEST(WordCountSort, ManyThreadsGiveTheOneThreadOrder) {
  std::mt19937_64 rng(5);
  std::vector<std::pair<std::string, std::uint64_t>> v;
  // Long shared prefixes, NUL bytes, bytes >= 0x80, one- to 20-byte words and many equal counts.
  const std::string prefixes[] = {"", "abcdefgh", "abcdefg", std::string("ab\0", 3), "\xff\xfe"};
  for (int i = 0; i < 60000; ++i) {
    std::string w = prefixes[rng() % 5];
    const int len = 1 + int(rng() % 12);
    for (int j = 0; j < len; ++j) w += char(rng() % 4 == 0 ? 0x80 + rng() % 128 : 'a' + rng() % 3);
    if (rng() % 50 == 0) w.resize(rng() % (w.size() + 1));
    v.emplace_back(w, rng() % 6);
  }
  auto one = v, many = v;
  mapreduce::sort_word_counts(one, 1);
  mapreduce::sort_word_counts(many, 4);
  EXPECT_EQ(many, one);
  EXPECT_TRUE(std::is_sorted(one.begin(), one.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  }));
}
