// tandem::sort_files (array files sorted within a memory limit) against std::stable_sort of the
// same arrays: limits that make one piece, a few runs and many runs with small windows; keys with
// many duplicates (stability shows in the values), floats with NaN and -0.0, descending, .npy and
// raw files, empty and one-element inputs; bad inputs fail naming the file and leave no output,
// and the scratch folder is gone afterwards. The sizing alone: plan_file_sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "sort/file_sort_plan.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/sort.hpp"
#include "test_util.hpp"

namespace {

using tandem::DType;
using tandem::detail::plan_file_sort;

template <class T>
std::vector<T> read(const std::string& path) {
  return tandem::io::read_vector<T>(path);
}

// The reference: a stable sort of (key, value) by tandem's key order.
template <class K, class V>
void reference(std::vector<K>& keys, std::vector<V>& values, bool descending) {
  std::vector<std::size_t> idx(keys.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    const auto x = tandem::to_ordered(keys[a]), y = tandem::to_ordered(keys[b]);
    return descending ? y < x : x < y;
  });
  std::vector<K> k(keys.size());
  std::vector<V> v(values.size());
  for (std::size_t i = 0; i < idx.size(); ++i) {
    k[i] = keys[idx[i]];
    if (!values.empty()) v[i] = values[idx[i]];
  }
  keys.swap(k);
  values.swap(v);
}

template <class K>
bool same_bits(const std::vector<K>& a, const std::vector<K>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [](K x, K y) { return tandem::to_ordered(x) == tandem::to_ordered(y); });
}

// Sorts keys (and values, when given) file to file under `limit` and checks the result.
template <class K, class V>
void check_sort(const TempDir& dir, std::vector<K> keys, std::vector<V> values, std::size_t limit, bool descending,
                const std::string& suffix, int threads, std::size_t expect_runs_at_least) {
  const bool pairs = !values.empty() || keys.empty();
  tandem::SortFiles f;
  f.keys = dir.file("k" + suffix);
  f.keys_out = dir.file("ko" + suffix);
  f.key_type = tandem::dtype_of<K>();
  tandem::io::write_vector<K>(f.keys, keys);
  if (pairs) {
    f.values = dir.file("v" + suffix);
    f.values_out = dir.file("vo" + suffix);
    f.value_type = tandem::dtype_of<V>();
    tandem::io::write_vector<V>(f.values, values);
  }
  const auto scratch = dir.path / "scratch";
  std::filesystem::create_directories(scratch);
  tandem::SortOptions o;
  o.descending = descending;
  o.threads = threads;
  o.device = tandem::Device::cpu;
  const tandem::Report r = tandem::sort_files(f, o, {limit, scratch.string()});
  reference(keys, values, descending);
  EXPECT_TRUE(same_bits(read<K>(f.keys_out), keys)) << "limit " << limit << " threads " << threads;
  if (pairs) {
    EXPECT_EQ(read<V>(f.values_out), values) << "limit " << limit << " threads " << threads;
  }
  EXPECT_TRUE(std::filesystem::is_empty(scratch)) << "the scratch folder is left behind";
  const std::size_t runs = plan_file_sort(keys.size(), sizeof(K) + (pairs ? sizeof(V) : 0), limit).runs;
  EXPECT_GE(runs, expect_runs_at_least);
  EXPECT_EQ(r.stages.size(), runs == 1 ? 1u : 2u) << r.explain();
}

TEST(SortFilesPlan, OnePieceWhenTwiceTheDataFits) {
  const auto p = plan_file_sort(1000, 16, 32000);
  EXPECT_EQ(p.runs, 1u);
  EXPECT_EQ(p.piece_elements, 1000u);
  EXPECT_EQ(plan_file_sort(0, 16, 1).runs, 1u);
  EXPECT_EQ(plan_file_sort(1000000, 16, 32000000).runs, 1u);
  EXPECT_EQ(plan_file_sort(1000001, 16, 32000000).runs, 2u);
}

TEST(SortFilesPlan, PiecesAndWindowsStayWithinTheLimit) {
  for (const std::uint64_t n : {std::uint64_t{1} << 20, std::uint64_t{1000003}, std::uint64_t{1000000000}})
    for (const std::size_t e : {4u, 8u, 12u, 16u})
      for (const std::size_t limit : {std::size_t{8} << 20, std::size_t{100} << 20, std::size_t{4} << 30}) {
        if (double(limit) < 2.0 * double(e) * std::sqrt(4096.0 * double(n))) {  // too small: refused
          EXPECT_THROW(plan_file_sort(n, e, limit), tandem::UsageError);
          continue;
        }
        const auto p = plan_file_sort(n, e, limit);
        EXPECT_LE(2 * p.piece_elements * e, limit) << n << " " << e << " " << limit;
        EXPECT_GE(std::uint64_t(p.piece_elements) * p.runs, n);
        EXPECT_LT(std::uint64_t(p.piece_elements) * (p.runs - 1), n);  // no empty piece
        if (p.runs > 1) {
          EXPECT_LE(2 * p.runs * p.window_elements * e, limit);
          EXPECT_GE(p.window_elements, tandem::detail::kMinRunWindow);
        }
      }
}

// The least limit a refusal names (its "(N bytes)").
std::size_t least_named(std::uint64_t n, std::size_t e, std::size_t limit) {
  std::string message;
  try {
    plan_file_sort(n, e, limit);
  } catch (const tandem::UsageError& err) {
    message = err.what();
  }
  EXPECT_NE(message.find("memory_limit"), std::string::npos) << message;
  const auto open = message.rfind('('), close = message.rfind(" bytes)");
  if (open == std::string::npos || close == std::string::npos) return 0;
  return std::stoull(message.substr(open + 1, close - open - 1));
}

TEST(SortFilesPlan, TooSmallALimitNamesTheLeastThatWorks) {
  const std::size_t least = least_named(1000000000, 16, 1 << 20);
  const auto p = plan_file_sort(1000000000, 16, least);
  EXPECT_GE(p.window_elements, tandem::detail::kMinRunWindow);
  EXPECT_GT(least, std::size_t{60} << 20);  // about 2 * 16 * sqrt(4096 * 10^9) = 64.8 MB
  EXPECT_LT(least, std::size_t{70} << 20);
  // A small input: the least limit may hold it whole.
  const std::size_t small = least_named(1001, 16, 32000);
  const auto q = plan_file_sort(1001, 16, small);
  EXPECT_TRUE(q.runs == 1 || q.window_elements >= tandem::detail::kMinRunWindow);
}

TEST(SortFiles, PairsWithDuplicatesStayStableInEveryShapeOfRuns) {
  TempDir dir;
  std::mt19937_64 rng(7);
  const std::size_t n = 200003;
  std::vector<std::uint64_t> keys(n);
  std::vector<std::uint32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = rng() % 1000, values[i] = std::uint32_t(i);
  // 12 bytes a pair: one piece; 5 runs; 7 runs with windows near the least size (4285).
  check_sort(dir, keys, values, std::size_t{8} << 20, false, "", 2, 1);
  check_sort(dir, keys, values, 1 << 20, false, "", 3, 5);
  check_sort(dir, keys, values, 2 * 12 * 30000, true, "", 1, 7);
  std::vector<std::uint64_t> v64(values.begin(), values.end());
  check_sort(dir, keys, v64, 1200000, false, ".npy", 2, 6);
}

TEST(SortFiles, AllKeysEqualKeepTheInputOrder) {
  TempDir dir;
  std::vector<std::int32_t> keys(100000, -5);
  std::vector<std::uint32_t> values(keys.size());
  std::iota(values.begin(), values.end(), 0u);
  check_sort(dir, keys, values, 400000, false, "", 2, 4);
}

TEST(SortFiles, FloatsWithNanAndSignedZerosKeysOnly) {
  TempDir dir;
  std::mt19937_64 rng(11);
  std::vector<double> keys(150001);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0,
                             std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (auto& k : keys) k = rng() % 4 == 0 ? specials[rng() % 5] : std::ldexp(double(rng() % 100000) - 5e4, -7);
  check_sort(dir, keys, std::vector<std::uint32_t>{}, 500000, false, ".npy", 2, 5);
  check_sort(dir, keys, std::vector<std::uint32_t>{}, 500000, true, "", 2, 5);
  std::vector<float> f(keys.begin(), keys.end());
  check_sort(dir, f, std::vector<std::uint32_t>{}, 250000, false, "", 2, 5);
}

TEST(SortFiles, EmptyAndOneElement) {
  TempDir dir;
  check_sort(dir, std::vector<std::uint64_t>{}, std::vector<std::uint64_t>{}, 1 << 20, false, ".npy", 2, 1);
  check_sort(dir, std::vector<std::int64_t>{-3}, std::vector<std::uint32_t>{9}, 1 << 20, false, "", 2, 1);
}

// Sorts by runs on several threads at once, beside in-memory sorts whose scratch blocks the pool
// holds while the sorts by runs give the pool's blocks back: each result as when computed alone.
TEST(SortFiles, SeveralThreadsAtOnce) {
  TempDir dir;
  const int threads = 3;
  std::vector<std::vector<std::uint64_t>> keys(threads);
  std::vector<std::vector<std::uint32_t>> values(threads);
  for (int t = 0; t < threads; ++t) {
    std::mt19937_64 rng(50 + t);
    keys[t].resize(120000 + 7 * t);
    values[t].resize(keys[t].size());
    for (std::size_t i = 0; i < keys[t].size(); ++i) keys[t][i] = rng() % 5000, values[t][i] = std::uint32_t(i);
  }
  std::vector<std::string> failures(threads);
  auto worker = [&](int t) {
    const std::string p = std::to_string(t);
    tandem::SortFiles f{dir.file("k" + p),  dir.file("v" + p), dir.file("ko" + p),
                        dir.file("vo" + p), DType::u64,        DType::u32};
    tandem::io::write_vector<std::uint64_t>(f.keys, keys[t]);
    tandem::io::write_vector<std::uint32_t>(f.values, values[t]);
    tandem::SortOptions o;
    o.device = tandem::Device::cpu;
    o.threads = 2;
    o.descending = t == 1;
    auto want_k = keys[t];
    auto want_v = values[t];
    reference(want_k, want_v, o.descending);
    for (int round = 0; round < 3 && failures[t].empty(); ++round) {
      tandem::sort_files(f, o, {600000, dir.path.string()});
      if (read<std::uint64_t>(f.keys_out) != want_k || read<std::uint32_t>(f.values_out) != want_v)
        failures[t] = "by runs, round " + std::to_string(round);
      auto k = keys[t];  // an in-memory sort of 2^21 keys: its scratch comes from the pool
      k.resize(std::size_t{1} << 21, 3);
      tandem::sort(std::span<std::uint64_t>(k), o);
      if (!std::is_sorted(k.begin(), k.end(), [&](auto a, auto b) { return o.descending ? b < a : a < b; }))
        failures[t] = "in memory, round " + std::to_string(round);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
}

TEST(SortFiles, BadInputsNameTheFileAndLeaveNoOutput) {
  TempDir dir;
  tandem::io::write_vector<std::uint64_t>(dir.file("k"), std::vector<std::uint64_t>(1000, 1));
  tandem::io::write_vector<std::uint32_t>(dir.file("v"), std::vector<std::uint32_t>(999, 1));
  tandem::SortFiles f{dir.file("k"), dir.file("v"), dir.file("ko"), dir.file("vo"), DType::u64, DType::u32};
  const std::string e = input_error([&] { tandem::sort_files(f, {}, {4096, {}}); });
  EXPECT_NE(e.find(dir.file("v")), std::string::npos) << e;
  EXPECT_NE(e.find("999 values for 1000 keys"), std::string::npos) << e;
  EXPECT_FALSE(std::filesystem::exists(dir.file("ko")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("vo")));

  f.values = dir.file("absent");
  EXPECT_NE(input_error([&] { tandem::sort_files(f, {}, {4096, {}}); }).find("absent"), std::string::npos);

  f.values = dir.file("v");
  f.values_out = f.keys_out;
  EXPECT_THROW(tandem::sort_files(f, {}, {4096, {}}), tandem::UsageError);
  f.values_out = dir.file("vo");
  f.value_type = DType::f32;
  EXPECT_THROW(tandem::sort_files(f, {}, {4096, {}}), tandem::UsageError);

  // A raw file whose length is no whole number of keys.
  tandem::io::write_vector<std::uint8_t>(dir.file("odd"), std::vector<std::uint8_t>(13, 0));
  tandem::SortFiles odd{dir.file("odd"), "", dir.file("oo"), "", DType::u32, DType::u32};
  EXPECT_NE(input_error([&] { tandem::sort_files(odd, {}, {4096, {}}); }).find("odd"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("oo")));
  // A limit too small to merge: nothing written, no scratch folder left.
  std::vector<std::uint32_t> many(1 << 20);
  tandem::io::write_vector<std::uint32_t>(dir.file("many"), many);
  const auto scratch = dir.path / "scratch";
  std::filesystem::create_directories(scratch);
  tandem::SortFiles m{dir.file("many"), "", dir.file("mo"), "", DType::u32, DType::u32};
  EXPECT_THROW(tandem::sort_files(m, {}, {4096, scratch.string()}), tandem::UsageError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("mo")));
  EXPECT_TRUE(std::filesystem::is_empty(scratch));
}

}  // namespace
