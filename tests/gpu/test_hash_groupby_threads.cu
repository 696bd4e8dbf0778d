// The GPU hash group-by's context (src/groupby/hash/context.hpp) under two host threads
// at once on one device: each thread borrows its own workspace of one shared context and runs the
// engine on counts (u32 keys) and integer aggregates (u64 keys) through the grow, two-choice,
// hot-key and global-table paths; each result must equal a CPU reference. The tests' engine entry
// (engine_test::groupby, hash mode) is run from two threads at once as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "gpu/engine_groupby.hpp"
#include "groupby/hash/context.hpp"
#include "groupby/hash/engine.hpp"
#include "tandem/core/device.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/mapreduce.hpp"
#include "test_util.hpp"

using namespace tandem;
namespace hg = tandem::hash_groupby;

namespace {

bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

// Keys drawn from `distinct` values, Zipf-like skew by squaring a uniform draw.
template <class K>
std::vector<K> skewed_keys(std::size_t n, std::uint64_t distinct, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<K> k(n);
  for (auto& x : k) {
    const double r = u(rng);
    x = static_cast<K>(std::uint64_t(r * r * double(distinct)) * 2654435761ull + seed);
  }
  return k;
}

// One case: what the thread runs and the options that steer it down one path of the engine.
struct Case {
  std::string name;
  std::size_t n;
  std::uint64_t distinct;
  engine_test::Options o;
};

std::vector<Case> cases() {
  const std::size_t n = sanitizer() ? 50000 : 2000000;
  engine_test::Options base;
  base.tune = false;
  Case few{"few keys (two-choice table)", n, 200, base};
  Case skew{"skewed (hot keys)", n, 200000, base};
  Case grow{"tiny table (grow)", n / 4, 50000, base};
  grow.o.result_entries = 64;
  Case cold{"no hot keys", n / 2, 1000000, base};
  cold.o.hot_keys = false;
  return {few, skew, grow, cold};
}

void check_counts(const std::vector<std::pair<std::uint32_t, std::uint64_t>>& got,
                  const std::vector<std::uint32_t>& keys, const std::string& what) {
  std::unordered_map<std::uint32_t, std::uint64_t> ref;
  for (auto k : keys) ++ref[k];
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (const auto& [k, c] : got) {
    auto it = ref.find(k);
    ASSERT_NE(it, ref.end()) << what << " key " << k;
    EXPECT_EQ(c, it->second) << what << " key " << k;
  }
}

void check_aggs(const std::vector<std::pair<std::uint64_t, mapreduce::Agg<std::int64_t>>>& got,
                const std::vector<std::uint64_t>& keys, const std::vector<std::int64_t>& values,
                const std::string& what) {
  std::unordered_map<std::uint64_t, mapreduce::Agg<std::int64_t>> ref;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto [it, fresh] = ref.try_emplace(keys[i], mapreduce::Agg<std::int64_t>{0, values[i], values[i], 0});
    auto& a = it->second;
    a.sum += values[i];
    a.min = std::min(a.min, values[i]);
    a.max = std::max(a.max, values[i]);
    ++a.count;
  }
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (const auto& [k, a] : got) {
    auto it = ref.find(k);
    ASSERT_NE(it, ref.end()) << what << " key " << k;
    EXPECT_EQ(a.sum, it->second.sum) << what << " key " << k;
    EXPECT_EQ(a.min, it->second.min) << what << " key " << k;
    EXPECT_EQ(a.max, it->second.max) << what << " key " << k;
    EXPECT_EQ(a.count, it->second.count) << what << " key " << k;
  }
}

// Thread 0 counts u32 keys, thread 1 aggregates i64 values by u64 keys: the two engines share the
// context's workspaces one after the other, never at once.
void run_thread(hg::Context& ctx, int t, int rounds) {
  gpu::Stream s;
  for (int r = 0; r < rounds; ++r)
    for (const Case& c : cases()) {
      const std::string what = c.name + ", thread " + std::to_string(t) + ", round " + std::to_string(r);
      mapreduce::EngineStats st;
      Report rep;
      hg::DeviceContext& dev = ctx.current();
      if (t == 0) {
        const auto keys = skewed_keys<std::uint32_t>(c.n, c.distinct, 11 + r);
        gpu::DeviceBuffer<std::uint32_t> dk(keys.size());
        TANDEM_CUDA(cudaMemcpy(dk.data(), keys.data(), keys.size() * 4, cudaMemcpyHostToDevice));
        auto ws = dev.borrow();
        const auto got = hg::Engine<std::uint32_t, void>(dev, *ws).run(dk.data(), nullptr, c.n, c.o, st, rep, s.get());
        check_counts(got, keys, what);
      } else {
        const auto keys = skewed_keys<std::uint64_t>(c.n, c.distinct, 23 + r);
        std::vector<std::int64_t> values(c.n);
        std::mt19937_64 rng(t + r);
        for (auto& v : values) v = std::int64_t(rng() % 2000001) - 1000000;
        gpu::DeviceBuffer<std::uint64_t> dk(keys.size());
        gpu::DeviceBuffer<std::int64_t> dv(values.size());
        TANDEM_CUDA(cudaMemcpy(dk.data(), keys.data(), keys.size() * 8, cudaMemcpyHostToDevice));
        TANDEM_CUDA(cudaMemcpy(dv.data(), values.data(), values.size() * 8, cudaMemcpyHostToDevice));
        auto ws = dev.borrow();
        const auto got =
            hg::Engine<std::uint64_t, std::int64_t>(dev, *ws).run(dk.data(), dv.data(), c.n, c.o, st, rep, s.get());
        check_aggs(got, keys, values, what);
      }
      EXPECT_EQ(st.engine, "hash") << what;
    }
}

}  // namespace

TEST(GpuHashGroupByContext, TwoThreadsShareOneContextAndEachMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  hg::Context ctx;
  const int rounds = sanitizer() ? 1 : 3;
  std::thread a([&] { run_thread(ctx, 0, rounds); });
  std::thread b([&] { run_thread(ctx, 1, rounds); });
  a.join();
  b.join();
  hg::DeviceContext& dev = ctx.current();
  // one workspace per thread that ran at once, at most; both given back
  EXPECT_GE(dev.idle_workspaces(), 1u);
  EXPECT_LE(dev.idle_workspaces(), 2u);
  EXPECT_GT(dev.props().sms, 0);
  EXPECT_GT(dev.props().optin, 0u);
  EXPECT_EQ(&ctx.current(), &dev);  // one context per device, made once
}

// Both threads launch the same pass kernel (counts, bucketed hot table with lanes grouped by key)
// with hot tables of different sizes: each needs its own dynamic shared-memory limit on the one
// device, which only ever rises (gpu::allow_dynamic_shared; a limit lowered by one thread between
// the other's setting and launch would fail that launch).
TEST(GpuHashGroupByContext, OneKernelWithTwoSharedSizesAtOnce) {
  TANDEM_REQUIRE_GPU();
  hg::Context ctx;
  const std::size_t n = sanitizer() ? 50000 : 1000000;
  const int rounds = sanitizer() ? 2 : 20;
  auto work = [&](int t) {
    const auto keys = skewed_keys<std::uint32_t>(n, 200000, 3);
    gpu::DeviceBuffer<std::uint32_t> dk(keys.size());
    TANDEM_CUDA(cudaMemcpy(dk.data(), keys.data(), keys.size() * 4, cudaMemcpyHostToDevice));
    engine_test::Options o;
    o.tune = false;
    o.hot_fraction = 1.0;
    o.shared_entries = t ? 4096 : 256;  // hot tables of about 2 KB and 33 KB
    gpu::Stream s;
    for (int r = 0; r < rounds; ++r) {
      mapreduce::EngineStats st;
      Report rep;
      hg::DeviceContext& dev = ctx.current();
      auto ws = dev.borrow();
      const auto got = hg::Engine<std::uint32_t, void>(dev, *ws).run(dk.data(), nullptr, n, o, st, rep, s.get());
      check_counts(got, keys, "thread " + std::to_string(t) + ", round " + std::to_string(r));
      EXPECT_GT(st.hot_keys, 0u) << "thread " << t;
      EXPECT_LE(st.hot_keys, o.shared_entries) << "thread " << t;
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
}

TEST(GpuHashGroupByContext, LibraryGroupByFromTwoThreadsMatchesTheCpu) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 50000 : 1000000;
  auto work = [&](int t) {
    const auto keys = skewed_keys<std::uint32_t>(n + 1000 * t, t ? 300 : 100000, 5 + t);
    std::vector<std::int64_t> values(keys.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::int64_t(i % 1000) - 500;
    engine_test::Options cpu, gpu;
    cpu.device = Device::cpu;
    gpu.device = Device::gpu;
    gpu.mode = engine_test::Options::Mode::hash;
    const auto want =
        engine_test::groupby(DType::u32, keys.data(), keys.size(), DType::i64, values.data(), values.size(), true, cpu);
    for (int r = 0; r < 4; ++r) {
      const auto got = engine_test::groupby(DType::u32, keys.data(), keys.size(), DType::i64, values.data(),
                                            values.size(), true, gpu);
      EXPECT_EQ(got.gpu.engine, "hash");
      ASSERT_EQ(got.rows.size(), want.rows.size()) << "thread " << t;
      for (std::size_t i = 0; i < got.rows.size(); ++i) {
        ASSERT_EQ(got.rows[i].key_bits, want.rows[i].key_bits) << "thread " << t << " row " << i;
        EXPECT_EQ(got.rows[i].count, want.rows[i].count) << "thread " << t << " row " << i;
        EXPECT_EQ(got.rows[i].isum, want.rows[i].isum) << "thread " << t << " row " << i;
        EXPECT_EQ(got.rows[i].imin, want.rows[i].imin) << "thread " << t << " row " << i;
        EXPECT_EQ(got.rows[i].imax, want.rows[i].imax) << "thread " << t << " row " << i;
      }
    }
  };
  std::thread a(work, 0), b(work, 1);
  a.join();
  b.join();
}
