// The chained GPU MapReduce engine (Options::mode = chained) against std::unordered_map references, with tiny buffers
// that force every spill, grow and retry path, with the hot-key path on and off, in block and direct modes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/engine_groupby.hpp"
#include "tandem/core/device.hpp"
#include "tandem/mapreduce.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {
bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

std::unordered_map<std::uint32_t, std::uint64_t> ref_counts(const std::vector<std::uint32_t>& k) {
  std::unordered_map<std::uint32_t, std::uint64_t> m;
  for (auto x : k) ++m[x];
  return m;
}

void expect_counts(const engine_test::GroupBy& g, const std::vector<std::uint32_t>& keys, const std::string& what) {
  auto ref = ref_counts(keys);
  ASSERT_EQ(g.rows.size(), ref.size()) << what;
  for (const auto& r : g.rows) {
    auto it = ref.find(static_cast<std::uint32_t>(r.key_bits));
    ASSERT_NE(it, ref.end()) << what << " key " << r.key_bits;
    EXPECT_EQ(r.count, it->second) << what << " key " << r.key_bits;
  }
}

// These tests cover the chained engine (group-by's default GPU path is the hash path: see
// test_mapreduce_hash.cpp).
engine_test::Options gpu_opts() {
  engine_test::Options o;
  o.device = Device::gpu;
  o.mode = engine_test::Options::Mode::chained;
  return o;
}
}  // namespace

TEST(GpuMapReduce, GroupByCountsAllModes) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 20000 : 1000003;
  for (double s : {0.0, 1.0, 1.5}) {
    for (std::uint64_t distinct : {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{50000}}) {
      auto keys = mapreduce::zipf_keys_u32(n, distinct, s, 3 + distinct);
      for (int mode = 0; mode < 4; ++mode) {
        auto o = gpu_opts();
        o.hot_keys = mode & 1;
        o.tables = (mode & 2) ? engine_test::Options::Tables::block : engine_test::Options::Tables::direct;
        auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
        expect_counts(g, keys,
                      "s=" + std::to_string(s) + " d=" + std::to_string(distinct) + " mode=" + std::to_string(mode));
        EXPECT_EQ(g.gpu.records, n);
        EXPECT_EQ(g.gpu.shared_hits + g.gpu.global_hits + g.gpu.spilled >= n, true);
      }
    }
  }
}

// The engine's point: on skewed keys the hot ones are reduced in the shared-memory pool. A result
// check alone would pass with an engine that never used it, so the pool's hits are asserted.
TEST(GpuMapReduce, HotKeysAreReducedInSharedMemory) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 20000 : 1000003;
  auto keys = mapreduce::zipf_keys_u32(n, 50000, 1.5, 21);  // the top 100 keys hold ~90% of the records
  auto o = gpu_opts();
  o.hot_keys = true;
  auto on = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
  expect_counts(on, keys, "hot keys on");
  EXPECT_GE(on.gpu.shared_hits, n / 3) << "shared hits " << on.gpu.shared_hits << " of " << n;
  o.hot_keys = false;
  auto off = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
  expect_counts(off, keys, "hot keys off");
  EXPECT_LT(off.gpu.shared_hits, on.gpu.shared_hits);
}

// The shared pool's share of the updates, with the pool's size fixed (8 blocks of 256 threads, 512
// entries each, no tuning) so the expectation does not depend on the device. Zipf(1.2) keys over
// 100,000 values: the hot keys of the 1% sample (and the first keys each block meets) take ~77% of
// the records. Uniform keys over 2^32: nearly every key is new, the pool holds at most 8 x 512 of
// them, and the rest must go to global memory.
namespace {
engine_test::Options fixed_pool_opts() {
  auto o = gpu_opts();
  o.hot_keys = true;
  o.tune = false;
  o.blocks = 8;
  o.block_threads = 256;
  o.shared_entries = 512;
  return o;
}
}  // namespace

TEST(GpuMapReduce, SkewedKeysMostlyHitTheSharedPool) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 100000 : 2000003;
  const auto keys = mapreduce::zipf_keys_u32(n, 100000, 1.2, 5);
  const auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, fixed_pool_opts());
  expect_counts(g, keys, "zipf 1.2");
  EXPECT_GT(g.gpu.hot_keys, 0u);
  EXPECT_GT(g.gpu.shared_hits, n / 2) << "shared " << g.gpu.shared_hits << ", global " << g.gpu.global_hits;
  EXPECT_GT(g.gpu.shared_hits, 2 * g.gpu.global_hits);
}

TEST(GpuMapReduce, UniformKeysOverAHugeKeySpaceMostlyMissTheSharedPool) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 100000 : 2000003;
  std::mt19937 rng(9);
  std::vector<std::uint32_t> keys(n);
  for (auto& k : keys) k = rng();  // 2^32 values: almost every key occurs once
  const auto o = fixed_pool_opts();
  const auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
  expect_counts(g, keys, "uniform 2^32");
  EXPECT_LE(g.gpu.shared_hits, std::uint64_t(o.blocks) * o.shared_entries + n / 1000)
      << "only the pool's entries (and rare repeats) can be shared hits";
  EXPECT_LT(g.gpu.shared_hits, n / 10);
  EXPECT_GT(g.gpu.global_hits + g.gpu.spilled, n - n / 10);
}

TEST(GpuMapReduce, TinyBuffersForceSpillGrowRetry) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 5000 : 200001;
  auto keys = mapreduce::zipf_keys_u32(n, 20000, 0.8, 11);
  for (bool block : {true, false}) {
    auto o = gpu_opts();
    o.tables = block ? engine_test::Options::Tables::block : engine_test::Options::Tables::direct;
    o.blocks = 3;
    o.block_threads = 64;
    o.shared_entries = 4;
    o.block_pool_entries = 8;
    o.spill_entries = 16;
    o.result_entries = 4;
    o.sample_fraction = 0.05;
    auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    expect_counts(g, keys, block ? "block" : "direct");
    // Block mode: 8-entry pools and a 16-entry spill list overflow, so the job is rerun with larger
    // buffers. Direct mode: the 4-entry result is grown before the passes and merges.
    if (block) {
      EXPECT_GT(g.gpu.retries, 0u);
    }
    EXPECT_GT(g.gpu.result_grows, 0u);
  }
}

TEST(GpuMapReduce, EdgeCases) {
  TANDEM_REQUIRE_GPU();
  for (auto mode : {engine_test::Options::Mode::chained, engine_test::Options::Mode::hash}) {  // both engines
    auto o = gpu_opts();
    o.mode = mode;
    std::vector<std::uint32_t> empty;
    auto g0 = engine_test::groupby(DType::u32, empty.data(), 0, DType::f64, nullptr, 0, false, o);
    EXPECT_TRUE(g0.rows.empty());
    std::vector<std::uint32_t> one{42};
    auto g1 = engine_test::groupby(DType::u32, one.data(), 1, DType::f64, nullptr, 0, false, o);
    ASSERT_EQ(g1.rows.size(), 1u);
    EXPECT_EQ(g1.rows[0].key_bits, 42u);
    EXPECT_EQ(g1.rows[0].count, 1u);
  }
  // all distinct, non-power-of-two size
  std::vector<std::uint32_t> all(77777);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = scatter32(static_cast<std::uint32_t>(i));
  auto g2 = engine_test::groupby(DType::u32, all.data(), all.size(), DType::f64, nullptr, 0, false, gpu_opts());
  expect_counts(g2, all, "all distinct");
}

TEST(GpuMapReduce, GroupByAggregatesFloatAndInt) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 10000 : 300007;
  auto keys = mapreduce::zipf_keys_u64(n, 3000, 1.1, 5);
  std::vector<double> dv(n);
  std::vector<std::int64_t> iv(n);
  for (std::size_t i = 0; i < n; ++i) {
    dv[i] = double(std::int64_t(mix64(i) % 2001) - 1000);  // integers: exact sums in any order
    iv[i] = std::int64_t(mix64(i + 7) % 1000001) - 500000;
  }
  dv[5] = -0.0;
  for (int mode = 0; mode < 2; ++mode) {
    auto o = gpu_opts();
    o.tables = mode ? engine_test::Options::Tables::block : engine_test::Options::Tables::direct;
    auto gd = engine_test::groupby(DType::u64, keys.data(), n, DType::f64, dv.data(), n, true, o);
    auto gi = engine_test::groupby(DType::u64, keys.data(), n, DType::i64, iv.data(), n, true, o);
    o.device = Device::cpu;
    auto cd = engine_test::groupby(DType::u64, keys.data(), n, DType::f64, dv.data(), n, true, o);
    auto ci = engine_test::groupby(DType::u64, keys.data(), n, DType::i64, iv.data(), n, true, o);
    ASSERT_EQ(gd.rows.size(), cd.rows.size());
    ASSERT_EQ(gi.rows.size(), ci.rows.size());
    for (std::size_t i = 0; i < gd.rows.size(); ++i) {
      EXPECT_EQ(gd.rows[i].key_bits, cd.rows[i].key_bits);
      EXPECT_EQ(gd.rows[i].count, cd.rows[i].count);
      EXPECT_EQ(gd.rows[i].dsum, cd.rows[i].dsum);
      EXPECT_EQ(gd.rows[i].dmin, cd.rows[i].dmin);
      EXPECT_EQ(gd.rows[i].dmax, cd.rows[i].dmax);
      EXPECT_EQ(gi.rows[i].isum, ci.rows[i].isum);
      EXPECT_EQ(gi.rows[i].imin, ci.rows[i].imin);
      EXPECT_EQ(gi.rows[i].imax, ci.rows[i].imax);
    }
  }
}

// The chained engine's table mode and the hash path's parameters: tuned on the first call, read from
// the tuning cache on the second, correct both times.
TEST(GpuMapReduce, TunedParametersAreCachedAndCorrect) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 30000 : 1 << 20;
  auto keys = mapreduce::zipf_keys_u32(n, 10000, 1.0, 21);
  for (auto mode : {engine_test::Options::Mode::chained, engine_test::Options::Mode::hash}) {
    auto o = gpu_opts();
    o.mode = mode;
    o.tune_min_records = 1;  // tune even this small job
    auto g1 = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    auto g2 = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    const std::string engine = mode == engine_test::Options::Mode::chained ? "chained" : "hash";
    expect_counts(g1, keys, engine + " tuned");
    expect_counts(g2, keys, engine + " cached");
    EXPECT_EQ(g2.gpu.engine, engine);
    bool from_cache = false;
    for (const auto& note : g2.report.notes) from_cache = from_cache || note.find("tuning cache") != std::string::npos;
    EXPECT_TRUE(from_cache) << engine;
  }
}

TEST(GpuMapReduce, WordCountMatchesReference) {
  TANDEM_REQUIRE_GPU();
  auto vocab = mapreduce::make_vocabulary(3000, 2);
  std::string text = mapreduce::zipf_text(sanitizer() ? 50000 : 3000000, vocab, 1.0, 2);
  text += " ";
  text += std::string(100, 'x');  // a word far longer than the 32-byte inline key
  text += " \xff\xfe\x01garbage\x80\x81 ";
  text += std::string(100, 'x');
  for (int mode = 0; mode < 2; ++mode) {
    mapreduce::WordCountOptions o;
    o.engine = gpu_opts();
    o.engine.tables = mode ? engine_test::Options::Tables::block : engine_test::Options::Tables::direct;
    o.engine.shared_entries = mode ? 0 : 16;
    o.engine.block_pool_entries = mode ? 0 : 64;
    auto r = mapreduce::wordcount(text, o);
    std::unordered_map<std::string, std::uint64_t> ref;
    mapreduce::for_each_word(text.data(), text.size(), 0, text.size(),
                             [&](std::size_t b, std::size_t len) { ++ref[text.substr(b, len)]; });
    ASSERT_EQ(r.words.size(), ref.size());
    for (const auto& [w, c] : r.words) EXPECT_EQ(ref[w], c) << w;
    EXPECT_EQ(ref[std::string(100, 'x')], 2u);
  }
}

// Files read straight into pinned upload slots: several files (more than one upload slot of
// 32 MiB in all, so pieces of a file and the newlines between files land on slot edges), words
// longer than the key's 32 inline bytes (gathered from the device text) and lowercase on the GPU,
// against the CPU engine on the joined text.
TEST(GpuMapReduce, WordCountOfFilesMatchesTheCpuEngine) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  auto vocab = mapreduce::make_vocabulary(5000, 3);
  const std::size_t big = sanitizer() ? 300000 : (std::size_t{40} << 20);
  std::vector<std::string> parts = {mapreduce::zipf_text(big, vocab, 1.0, 3), "end",
                                    "Start " + std::string(70, 'Q') + " MiXeD",
                                    mapreduce::zipf_text(12345, vocab, 0.5, 4)};
  std::string joined;
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) joined += '\n';
    joined += parts[i];
    paths.push_back(dir.file("p" + std::to_string(i)));
    std::ofstream(paths.back(), std::ios::binary).write(parts[i].data(), std::streamsize(parts[i].size()));
  }
  for (bool lower : {false, true}) {
    mapreduce::WordCountOptions cpu;
    cpu.lowercase = lower;
    cpu.engine.device = Device::cpu;
    const auto want = mapreduce::wordcount(joined, cpu);
    mapreduce::WordCountOptions o = cpu;
    o.engine = gpu_opts();
    const auto got = mapreduce::wordcount_files(paths, o);
    EXPECT_EQ(got.words, want.words) << "lowercase " << lower;
    EXPECT_EQ(got.total_words, want.total_words);
    const auto& stages = got.report.stages;
    EXPECT_TRUE(std::any_of(stages.begin(), stages.end(), [](const Stage& s) { return s.name == "read + H2D text"; }));
  }
}
