// dist::wordcount equals the single-process count of every rank's text together.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "dist_helpers.hpp"

namespace tandem::dist::test {
namespace {

std::string text_for(int rank, std::size_t words) {
  static const char* vocabulary[] = {"the", "a",           "tandem", "Rank", "rank", "\xc3\xa9t\xc3\xa9",
                                     "x",   "longer-word", "zipf"};
  std::mt19937_64 rng(7 + std::uint64_t(rank));
  std::string t;
  for (std::size_t i = 0; i < words; ++i) {
    const std::size_t r = rng() % 100;
    t += r < 40 ? vocabulary[0] : vocabulary[1 + r % 8];
    if (r % 7 == 0) t += std::to_string(rng() % 50);
    t += (r % 5 == 0) ? "\n" : " ";
  }
  return t;
}

void check(std::size_t words_per_rank, bool lowercase) {
  const Context& ctx = context();
  const std::string mine = ctx.rank() == 1 ? std::string() : text_for(ctx.rank(), words_per_rank);
  // Ranks' texts joined with a separator, so that no word spans two ranks.
  std::string all;
  for (char c : gather_all(std::vector<char>(mine.begin(), mine.end()), MPI_COMM_WORLD)) all += c;
  mapreduce::WordCountOptions opts;
  opts.lowercase = lowercase;
  opts.engine.device = Device::cpu;
  std::vector<std::string> texts;
  const auto want = mapreduce::wordcount(all, opts);

  const WordCountResult gathered = dist::wordcount(ctx, mine, opts, true);
  EXPECT_EQ(gathered.total_words, want.total_words);
  if (ctx.rank() == 0) EXPECT_EQ(gathered.words, want.words);
  else EXPECT_TRUE(gathered.words.empty());

  const WordCountResult partitioned = dist::wordcount(ctx, mine, opts);
  std::string flat;
  for (const auto& [w, c] : partitioned.words) flat += w + '\0' + std::to_string(c) + '\0';
  std::string all_flat;
  for (char c : gather_all(std::vector<char>(flat.begin(), flat.end()), MPI_COMM_WORLD)) all_flat += c;
  std::vector<std::pair<std::string, std::uint64_t>> joined;
  for (std::size_t at = 0; at < all_flat.size();) {
    const std::size_t a = all_flat.find('\0', at), b = all_flat.find('\0', a + 1);
    joined.emplace_back(all_flat.substr(at, a - at), std::stoull(all_flat.substr(a + 1, b - a - 1)));
    at = b + 1;
  }
  mapreduce::sort_word_counts(joined);
  EXPECT_EQ(joined, want.words);
}

TEST(DistWordCount, EqualsOneProcess) {
  check(20000, false);
  check(20000, true);
}

TEST(DistWordCount, EmptyText) { check(0, false); }

}  // namespace
}  // namespace tandem::dist::test
