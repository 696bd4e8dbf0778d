// MapReduce on the CPU: the engine against std::unordered_map references, spill paths with tiny
// tables, the shipped jobs' edge cases, output formats and generators.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "groupby/hash/bucket_table.hpp"
#include "groupby/hash/two_choice.hpp"
#include "tandem/core/distinct_estimate.hpp"
#include "tandem/core/error.hpp"
#include "tandem/mapreduce.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {
mapreduce::Options cpu(int threads = 3, std::size_t limit = 0) {
  mapreduce::Options o;
  o.device = Device::cpu;
  o.threads = threads;
  o.cpu_table_limit = limit;
  return o;
}

std::unordered_map<std::string, std::uint64_t> ref_words(const std::string& t) {
  std::unordered_map<std::string, std::uint64_t> m;
  std::string w;
  auto flush = [&] {
    if (!w.empty()) ++m[w];
    w.clear();
  };
  for (unsigned char c : t) {
    if (std::isalnum(c) || c == '\'' || c == '_' || c >= 0x80) w += char(c);
    else flush();
  }
  flush();
  return m;
}

void expect_words(const mapreduce::WordCount& r, const std::unordered_map<std::string, std::uint64_t>& ref) {
  ASSERT_EQ(r.words.size(), ref.size());
  for (const auto& [w, c] : r.words) {
    auto it = ref.find(w);
    ASSERT_NE(it, ref.end()) << w;
    EXPECT_EQ(it->second, c) << w;
  }
}
// A user job: key = x % 1000 (signed), value = {sum, count} struct via GroupByJob-like reduce.
struct ModJob {
  using key_type = std::int64_t;
  using value_type = std::pair<std::int64_t, std::uint64_t>;
  const std::vector<std::int64_t>* data;
  template <class Emit>
  void map(std::size_t i, Emit&& emit) const {
    const auto x = (*data)[i];
    emit(x % 1000, value_type{x, 1});
    if (x % 7 == 0) emit(-1, value_type{1, 1});  // a second pair for some records
  }
  void reduce(value_type& a, const value_type& b) const {
    a.first += b.first;
    a.second += b.second;
  }
};
}  // namespace

TEST(MapReduceCpu, GenericJobMatchesReferenceWithEverySpillPath) {
  std::vector<std::int64_t> d(100003);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = std::int64_t(mix64(i) % 20000) - 10000;
  std::unordered_map<std::int64_t, std::pair<std::int64_t, std::uint64_t>> ref;
  for (auto x : d) {
    auto& e = ref[x % 1000];
    e.first += x;
    ++e.second;
    if (x % 7 == 0) {
      ++ref[-1].first;
      ++ref[-1].second;
    }
  }
  for (std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{17}}) {
    for (int threads : {1, 3}) {
      mapreduce::CpuStats st;
      auto out = mapreduce::cpu_mapreduce(ModJob{&d}, d.size(), cpu(threads, limit), &st);
      ASSERT_EQ(out.size(), ref.size()) << limit;
      for (const auto& [k, v] : out) EXPECT_EQ(ref.at(k), v) << "key " << k << " limit " << limit;
      if (limit) {
        EXPECT_GT(st.spills, 0u);
      }
      EXPECT_EQ(st.threads, threads);
    }
  }
}

TEST(MapReduceCpu, EmptyAndSingleRecord) {
  mapreduce::GroupByJob<std::uint32_t, void> job{nullptr, nullptr};
  EXPECT_TRUE(mapreduce::cpu_mapreduce(job, 0, cpu()).empty());
  std::uint32_t k = 7;
  mapreduce::GroupByJob<std::uint32_t, void> one{&k, nullptr};
  auto out = mapreduce::cpu_mapreduce(one, 1, cpu(4, 1));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, 7u);
  EXPECT_EQ(out[0].second, 1u);
}

TEST(MapReduceWords, TokenizerBoundariesAndChunks) {
  const std::string t = "Hello, world! it's snake_case  héllo\tHello\n42 a-b";
  auto r = mapreduce::wordcount(t, {false, cpu()});
  expect_words(r, ref_words(t));
  EXPECT_EQ(r.words[0].first, "Hello");
  EXPECT_EQ(r.words[0].second, 2u);
  mapreduce::WordCountOptions lo{true, cpu()};
  auto l = mapreduce::wordcount("Apple APPLE apple ÄPPLE", lo);
  ASSERT_EQ(l.words.size(), 2u);
  EXPECT_EQ(l.words[0].first, "apple");
  EXPECT_EQ(l.words[0].second, 3u);
  EXPECT_EQ(l.words[1].first, "\xc3\x84pple");  // non-ASCII bytes are kept as they are
}

TEST(MapReduceWords, LongWordsGarbageAndChunkCrossing) {
  std::string t;
  for (int i = 0; i < 5000; ++i) {
    t += std::string(1 + i % 90, char('a' + i % 26));  // words up to 90 bytes, many crossing chunks
    t += (i % 3) ? " " : "\x01\x02,";
  }
  t += std::string(200000, 'z');  // one word longer than a whole CPU chunk (64 KiB)
  t += "\n\xff\xfe garbage\x7f\x80 end";
  for (std::size_t limit : {std::size_t{0}, std::size_t{3}}) {
    auto r = mapreduce::wordcount(t, {false, cpu(3, limit)});
    expect_words(r, ref_words(t));
  }
  auto empty = mapreduce::wordcount("", {false, cpu()});
  EXPECT_TRUE(empty.words.empty());
  auto blank = mapreduce::wordcount(" ,.\n\t!", {false, cpu()});
  EXPECT_TRUE(blank.words.empty());
}

TEST(MapReduceWords, SortOrderCountThenBytes) {
  std::vector<std::pair<std::string, std::uint64_t>> v{{"b", 2}, {"\xc3\xa9", 2}, {"a", 2}, {"z", 5}, {"B", 2}};
  mapreduce::sort_word_counts(v);
  EXPECT_EQ(v[0].first, "z");
  EXPECT_EQ(v[1].first, "B");
  EXPECT_EQ(v[2].first, "a");
  EXPECT_EQ(v[3].first, "b");
  EXPECT_EQ(v[4].first, "\xc3\xa9");  // bytes >= 0x80 sort after ASCII
}

namespace {
// The CPU engine running a group-by job, its pairs sorted by key.
template <class Job>
auto engine_pairs(const Job& job, std::size_t n, const mapreduce::Options& o, mapreduce::CpuStats* stats) {
  auto pairs = mapreduce::cpu_mapreduce(job, n, o, stats);
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return pairs;
}
template <class K, class V>
auto engine_groups(const std::vector<K>& keys, const V* vals, const mapreduce::Options& o,
                   mapreduce::CpuStats* stats = nullptr) {
  return engine_pairs(mapreduce::GroupByJob<K, V>{keys.data(), vals}, keys.size(), o, stats);
}
template <class K>
auto engine_counts(const std::vector<K>& keys, const mapreduce::Options& o) {
  return engine_pairs(mapreduce::GroupByJob<K, void>{keys.data(), nullptr}, keys.size(), o, nullptr);
}
}  // namespace

TEST(MapReduceGroupBy, AggregatesMatchReference) {
  const std::size_t n = 50001;
  auto keys = mapreduce::zipf_keys_u32(n, 700, 1.2, 4);
  std::vector<float> vals(n);
  for (std::size_t i = 0; i < n; ++i) vals[i] = float(int(mix64(i) % 200) - 100) * 0.5f;
  vals[3] = -0.0f;
  std::unordered_map<std::uint32_t, std::vector<float>> ref;
  for (std::size_t i = 0; i < n; ++i) ref[keys[i]].push_back(vals[i]);
  for (std::size_t limit : {std::size_t{0}, std::size_t{5}}) {
    mapreduce::CpuStats st;
    const auto g = engine_groups(keys, vals.data(), cpu(3, limit), &st);
    if (limit) {
      EXPECT_GT(st.spills, 0u);
    }
    ASSERT_EQ(g.size(), ref.size());
    for (std::size_t i = 1; i < g.size(); ++i) EXPECT_LT(g[i - 1].first, g[i].first);  // each key once
    for (const auto& [key, a] : g) {
      const auto& v = ref.at(key);
      double s = 0, mn = v[0], mx = v[0];
      for (float x : v) {
        s += x;
        mn = std::min<double>(mn, x);
        mx = std::max<double>(mx, x);
      }
      EXPECT_EQ(a.count, v.size());
      EXPECT_EQ(a.sum, s);  // halves of small integers: exact in any order
      EXPECT_EQ(a.min, mn);
      EXPECT_EQ(a.max, mx);
    }
  }
}

TEST(MapReduceGroupBy, SignedKeysNaNAndNegativeZero) {
  std::vector<std::int32_t> k{-5, 3, -5, 3, 0, -5};
  std::vector<double> v{1.0, std::nan(""), -0.0, 2.0, -0.0, 0.0};
  const auto g = engine_groups(k, v.data(), cpu());
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].first, -5);  // 1, -0.0, +0.0: min is -0.0, the sum +1
  EXPECT_EQ(g[0].second.count, 3u);
  EXPECT_EQ(g[0].second.sum, 1.0);
  EXPECT_TRUE(g[0].second.min == 0.0 && std::signbit(g[0].second.min));
  EXPECT_EQ(g[0].second.max, 1.0);
  EXPECT_EQ(g[1].first, 0);  // -0.0 alone: sum, min and max -0.0
  EXPECT_TRUE(std::signbit(g[1].second.sum) && std::signbit(g[1].second.min) && std::signbit(g[1].second.max));
  EXPECT_EQ(g[2].first, 3);  // NaN and 2: the sum propagates NaN, min and max skip it
  EXPECT_TRUE(std::isnan(g[2].second.sum));
  EXPECT_EQ(g[2].second.min, 2.0);
  EXPECT_EQ(g[2].second.max, 2.0);
  EXPECT_EQ(g[2].second.count, 2u);
  std::vector<std::int64_t> iv{10, -3, 4, 8, 1, -7};
  const auto gi = engine_groups(k, iv.data(), cpu());
  ASSERT_EQ(gi.size(), 3u);
  const std::int64_t want[3][3] = {{-7, 10, 7}, {1, 1, 1}, {-3, 8, 5}};  // min, max, sum of keys -5, 0, 3
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(gi[i].second.min, want[i][0]);
    EXPECT_EQ(gi[i].second.max, want[i][1]);
    EXPECT_EQ(gi[i].second.sum, want[i][2]);
  }
}

TEST(MapReduceGroupBy, CountsAloneAndEmptyInput) {
  std::vector<std::uint64_t> k{1, 2, 3, 2};
  const auto counts = engine_counts(k, cpu());
  ASSERT_EQ(counts.size(), 3u);
  EXPECT_EQ(counts[1], (std::pair<std::uint64_t, std::uint64_t>{2, 2}));
  const std::vector<std::uint64_t> none;
  EXPECT_TRUE((engine_counts(none, cpu()).empty()));
  EXPECT_TRUE((engine_groups<std::uint64_t, double>(none, nullptr, cpu(3, 1)).empty()));
}

TEST(MapReduceGenerators, ZipfShapeAndDeterminism) {
  auto a = mapreduce::zipf_ranks(100000, 1000, 1.0, 9);
  auto b = mapreduce::zipf_ranks(100000, 1000, 1.0, 9);
  EXPECT_EQ(a, b);
  std::vector<std::size_t> h(1000, 0);
  for (auto r : a) {
    ASSERT_LT(r, 1000u);
    ++h[r];
  }
  EXPECT_GT(h[0], h[9] * 5);  // ~10x under Zipf 1
  auto u = mapreduce::zipf_ranks(100000, 10, 0.0, 1);
  std::vector<std::size_t> hu(10, 0);
  for (auto r : u) ++hu[r];
  for (auto c : hu) EXPECT_NEAR(double(c), 10000.0, 600.0);
  EXPECT_THROW(mapreduce::zipf_ranks(10, 0, 1.0, 1), UsageError);
  auto vocab = mapreduce::make_vocabulary(500, 3);
  auto t = mapreduce::zipf_text(100000, vocab, 1.0, 3);
  EXPECT_EQ(t.size(), 100000u);
  auto r = mapreduce::wordcount(t, {false, cpu()});
  EXPECT_LE(r.words.size(), 501u);  // the vocabulary (+ a word cut at the end)
}

// The generator's guide table must not change a single rank: compare with a full binary search
// over the CDF, drawing the same random numbers (one chunk of 2^16 records: one RNG stream).
TEST(MapReduceGenerators, ZipfGuideTableEqualsFullSearch) {
  const std::vector<std::pair<std::uint64_t, double>> cases{{1, 0.0},      {7, 1.0},      {1000, 0.0}, {1000, 1.5},
                                                            {100000, 1.0}, {100000, 2.0}, {65537, 0.5}};
  for (const auto& [distinct, s] : cases) {
    const std::size_t n = 20000;
    const std::uint64_t seed = 17;
    const auto got = mapreduce::zipf_ranks(n, distinct, s, seed);
    std::vector<double> cdf(distinct);
    double acc = 0;
    for (std::uint64_t r = 0; r < distinct; ++r) {
      acc += s == 0 ? 1.0 : std::pow(double(r + 1), -s);
      cdf[r] = acc;
    }
    for (auto& c : cdf) c /= acc;
    std::mt19937_64 rng(mix64(seed * 0x9E3779B97F4A7C15ULL + 0));
    for (std::size_t i = 0; i < n; ++i) {
      const double u = double(rng() >> 11) * 0x1.0p-53;
      const auto want = std::min<std::uint64_t>(
          distinct - 1, std::uint64_t(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin()));
      ASSERT_EQ(got[i], want) << "distinct " << distinct << " s " << s << " i " << i;
    }
  }
}

// Two-choice placement (the hash path's shared table for few keys): every key at one of its two
// slots, each once; the empty marker and duplicates skipped; a table too small fails cleanly.
TEST(MapReduceTwoChoice, PlacesEveryKeyAtOneOfItsSlots) {
  namespace tc = tandem::hash_groupby::two_choice;
  std::mt19937_64 rng(5);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{100}, std::size_t{1024}}) {
    for (int shape = 0; shape < 3; ++shape) {
      std::vector<std::uint32_t> keys(n);
      for (std::size_t i = 0; i < n; ++i)
        keys[i] = shape == 0 ? static_cast<std::uint32_t>(rng())
                             : (shape == 1 ? static_cast<std::uint32_t>(i) : static_cast<std::uint32_t>(i << 20));
      if (n > 10) {
        keys[3] = 0xffffffffu;  // the empty marker: not placed
        keys[4] = keys[5];      // a duplicate: placed once
      }
      const std::uint32_t S = std::max<std::uint32_t>(64, 4 * static_cast<std::uint32_t>(n));
      std::vector<std::uint32_t> table;
      const std::uint32_t seed = tc::build<std::uint32_t>(keys, S, 0xffffffffu, table);
      SCOPED_TRACE(testing::Message() << "n=" << n << " shape=" << shape);
      ASSERT_NE(seed, 0u);
      ASSERT_EQ(table.size(), S);
      std::unordered_map<std::uint32_t, int> seen;
      for (std::uint32_t j = 0; j < S; ++j)
        if (table[j] != 0xffffffffu) {
          ++seen[table[j]];
          EXPECT_TRUE(tc::slot1(table[j], S) == j || tc::slot2(table[j], seed, S) == j)
              << "key " << table[j] << " at " << j;
        }
      for (auto k : keys) {
        if (k == 0xffffffffu) {
          EXPECT_EQ(seen.count(k), 0u);
          continue;
        }
        EXPECT_EQ(seen[k], 1) << "key " << k;
      }
    }
  }
  // 64-bit keys
  std::vector<std::uint64_t> k64(500);
  for (auto& k : k64) k = rng();
  std::vector<std::uint64_t> t64;
  const std::uint32_t seed64 = tc::build<std::uint64_t>(k64, 2000, ~std::uint64_t{0}, t64);
  ASSERT_NE(seed64, 0u);
  for (auto k : k64) EXPECT_TRUE(t64[tc::slot1(k, 2000)] == k || t64[tc::slot2(k, seed64, 2000)] == k);
  // more keys than slots: no placement, an empty table
  std::vector<std::uint32_t> many(100), table;
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<std::uint32_t>(i * 7 + 1);
  EXPECT_EQ(tc::build<std::uint32_t>(many, 50, 0xffffffffu, table, 4), 0u);
  EXPECT_TRUE(table.empty());
}

// The hash path's table size from its sample: Chao1 is a lower bound that misses a heavy tail's
// rare keys, Good–Turing's bound covers them; the table takes the bound while it is cheap.
TEST(MapReduceDistinctEstimate, ChaoBelowGoodTuringAboveOnRealSamples) {
  namespace de = tandem::distinct_estimate;
  auto sample_of = [](const std::vector<std::uint32_t>& keys, std::size_t ms) {
    std::unordered_map<std::uint32_t, std::uint32_t> c;
    for (std::size_t i = 0; i < ms; ++i) ++c[keys[i]];
    de::Sample s{ms, keys.size(), double(c.size()), 0, 0};
    for (const auto& [k, n] : c) {
      if (n == 1) ++s.once;
      if (n == 2) ++s.twice;
    }
    return s;
  };
  const std::size_t M = 2'000'000;
  for (double z : {0.0, 1.0, 2.0}) {
    const auto keys = mapreduce::zipf_keys_u32(M, 200'000, z, 5);
    const double truth = double(std::unordered_map<std::uint32_t, int>([&] {
                                  std::unordered_map<std::uint32_t, int> m;
                                  for (auto k : keys) m[k] = 1;
                                  return m;
                                }())
                                    .size());
    const auto s = sample_of(keys, M / 100);
    const auto e = de::estimate(s, 1e12);
    EXPECT_GE(e.chao1, s.distinct) << z;
    EXPECT_LE(e.chao1, e.upper) << z;
    EXPECT_GE(e.upper, truth) << z;   // the bound holds
    EXPECT_EQ(e.keys, e.upper) << z;  // cheap: sized for the bound
    if (z == 0.0) {
      EXPECT_NEAR(e.chao1, truth, 0.1 * truth);
    } else {
      EXPECT_LT(e.chao1, 0.8 * truth) << z;  // the tail Chao1 misses
    }
    const auto tight = de::estimate(s, 1);  // nothing is cheap: Chao1
    EXPECT_EQ(tight.keys, tight.chao1) << z;
  }
  // The whole input sampled: exactly the sample's keys. Nothing sampled: every record may be new.
  const auto all = de::estimate({100, 100, 40, 10, 5}, 1e12);
  EXPECT_EQ(all.keys, 40);
  const auto none = de::estimate({0, 100, 0, 0, 0}, 1e12);
  EXPECT_EQ(none.keys, 100);
  // Bounded by the records left: no more keys than the sample's plus one per remaining record.
  const auto few = de::estimate({10, 12, 10, 10, 0}, 1e12);
  EXPECT_LE(few.upper, 12);
  EXPECT_LE(few.chao1, 12);
}

// Bucketed two-choice tables (the hash path's hot table for many hot keys): sizes in whole
// buckets at 4/5 load, every key found in one of its two buckets exactly once, the empty marker
// skipped; past the table's room the walk leaves keys out rather than losing or duplicating any.
TEST(MapReduceBuckets, SizesAndPlacementAtFourFifthsLoad) {
  namespace bk = tandem::hash_groupby::buckets;
  EXPECT_EQ(bk::buckets_for(0), 1u);
  EXPECT_EQ(bk::buckets_for(1), 1u);
  EXPECT_EQ(bk::buckets_for(16), 5u);  // 16 keys at 4/5 of 4 ways: 5 buckets
  EXPECT_EQ(bk::buckets_for(17), 6u);
  EXPECT_EQ(bk::capacity(20), 16u);
  EXPECT_EQ(bk::capacity(23), 16u);  // whole buckets only
  for (std::uint32_t slots : {4u, 20u, 100u, 6143u, 12288u, 18430u}) {
    const std::uint32_t h = bk::capacity(slots);
    EXPECT_LE(bk::kWays * bk::buckets_for(h), std::max(slots / bk::kWays * bk::kWays, bk::kWays)) << slots;
  }
  std::mt19937_64 rng(9);
  for (std::uint32_t n : {1u, 3u, 100u, 4915u, 20000u}) {
    for (int shape = 0; shape < 3; ++shape) {
      std::vector<std::uint32_t> keys(n);
      for (std::uint32_t i = 0; i < n; ++i)
        keys[i] =
            shape == 0 ? static_cast<std::uint32_t>(rng()) : (shape == 1 ? i : i << 12);  // random, dense, strided
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      if (keys.size() > 10) keys[3] = 0xffffffffu;  // the empty marker: not placed
      const std::uint32_t nb = bk::buckets_for(n);
      std::vector<std::uint32_t> table;
      const auto left = bk::place<std::uint32_t>(keys, nb, 0xffffffffu, table);
      SCOPED_TRACE(testing::Message() << "n=" << n << " shape=" << shape);
      EXPECT_TRUE(left.empty()) << left.size() << " keys left out at 4/5 load";
      ASSERT_EQ(table.size(), std::size_t(nb) * bk::kWays);
      std::unordered_map<std::uint32_t, int> seen;
      for (std::uint32_t j = 0; j < table.size(); ++j)
        if (table[j] != 0xffffffffu) {
          ++seen[table[j]];
          const std::uint32_t b = j / bk::kWays;
          EXPECT_TRUE(b == bk::bucket1(table[j], nb) || b == bk::bucket2(table[j], nb))
              << "key " << table[j] << " in bucket " << b;
        }
      for (auto k : keys) {
        if (k == 0xffffffffu) continue;
        EXPECT_EQ(seen[k], 1) << "key " << k;
        EXPECT_GE(bk::find(table, k, nb), 0) << "key " << k;
      }
      EXPECT_EQ(bk::find(table, 0xfffffffeu, nb) >= 0, seen.count(0xfffffffeu) > 0);
    }
  }
  // 64-bit keys
  std::vector<std::uint64_t> k64(3000);
  for (auto& k : k64) k = rng() >> 1;
  std::vector<std::uint64_t> t64;
  const std::uint32_t nb64 = bk::buckets_for(3000);
  EXPECT_TRUE(bk::place<std::uint64_t>(k64, nb64, ~std::uint64_t{0}, t64).empty());
  for (auto k : k64) EXPECT_GE(bk::find(t64, k, nb64), 0);
  // twice the keys the table holds: the rest is left out, each key placed or left, never both or twice
  std::vector<std::uint32_t> many(200), t;
  for (std::uint32_t i = 0; i < many.size(); ++i) many[i] = i * 7 + 1;
  const auto left = bk::place<std::uint32_t>(many, 25, 0xffffffffu, t);
  std::unordered_map<std::uint32_t, int> where;
  for (auto k : t)
    if (k != 0xffffffffu) ++where[k];
  for (auto k : left) ++where[k];
  EXPECT_EQ(left.size(), many.size() - 100u);  // every slot filled
  for (auto k : many) EXPECT_EQ(where[k], 1) << "key " << k;
}

// ---- i64 sums modulo 2^64, float sums independent of the thread count ----

TEST(MapReduceGroupBy, I64SumsThatFitAreExactWhateverTheRunningSumDoes) {
  // The job sums modulo 2^64: exact whenever the sum fits i64, on any order and spill pattern.
  const std::int64_t top = INT64_MAX, bottom = INT64_MIN;
  const std::vector<std::int64_t> k{1, 1, 1, 2, 2}, v{top, 1, -1, bottom, top};
  for (int threads : {1, 2, 3, 8})
    for (std::size_t limit : {std::size_t{0}, std::size_t{1}}) {
      SCOPED_TRACE(testing::Message() << threads << " threads, limit " << limit);
      const auto g = engine_groups(k, v.data(), cpu(threads, limit));
      ASSERT_EQ(g.size(), 2u);
      EXPECT_EQ(g[0].second.sum, top);
      EXPECT_EQ(g[1].second.sum, -1);
    }
}

TEST(MapReduceGroupBy, FloatSumsAreTheSameOnEveryThreadCountAndRun) {
  // Magnitudes 1e16, 1 and 1e-3 with both signs: every order of addition rounds differently.
  const std::size_t n = 200003;
  const auto keys = mapreduce::zipf_keys_u32(n, 300, 1.0, 9);
  std::vector<double> vals(n);
  std::mt19937_64 rng(10);
  const double mag[3] = {1e16, 1.0, 1e-3};
  for (auto& v : vals) v = mag[rng() % 3] * (1.0 + double(rng() % 1000) / 7.0) * (rng() % 2 ? 1 : -1);
  // The documented order: record order within each block of fixed_order_block(n) records, the
  // blocks in order.
  const std::size_t block = mapreduce::fixed_order_block(n);
  std::unordered_map<std::uint32_t, double> want;
  for (std::size_t b = 0; b < n; b += block) {
    std::unordered_map<std::uint32_t, double> part;
    for (std::size_t i = b; i < std::min(n, b + block); ++i) {
      auto [it, fresh] = part.try_emplace(keys[i], vals[i]);
      if (!fresh) it->second += vals[i];
    }
    for (const auto& [k, s] : part) {
      auto [it, fresh] = want.try_emplace(k, s);
      if (!fresh) it->second += s;
    }
  }
  ASSERT_GT(n / block, 4u);
  for (int threads = 1; threads <= 8; ++threads)
    for (int run = 0; run < (threads == 8 ? 5 : 1); ++run) {
      const auto g = engine_groups(keys, vals.data(), cpu(threads));
      ASSERT_EQ(g.size(), want.size());
      for (const auto& [key, a] : g) ASSERT_EQ(a.sum, want.at(key)) << threads << " threads, key " << key;
    }
  // With a table limit the spills split blocks, but at the same points on every thread count.
  const auto one = engine_groups(keys, vals.data(), cpu(1, 50));
  for (int threads : {2, 5}) {
    const auto g = engine_groups(keys, vals.data(), cpu(threads, 50));
    ASSERT_EQ(g.size(), one.size());
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i].second.sum, one[i].second.sum);
  }
}
