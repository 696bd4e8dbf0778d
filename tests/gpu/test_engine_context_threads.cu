// The chained engine's state under two host threads at once (core/device_context.hpp): one thread
// counts words while the other runs a chained group-by, then the other way round, so each engine
// type also has two callers at once. Every result must equal the CPU engine's, and afterwards the
// engines must be kept, one per concurrent caller, in the library's context of the device. Then
// two threads launch the chained engine's pass kernel with shared pools of different sizes.
#include <gtest/gtest.h>

#include <barrier>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/device_context.hpp"
#include "core/device_pool.hpp"
#include "cpu_answers.hpp"
#include "gpu/engine_groupby.hpp"
#include "tandem/core/device.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/mapreduce/gpu_engine.cuh"
#include "test_util.hpp"

using namespace tandem;

namespace {

bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

// One thread's inputs and the CPU engine's answers.
struct Work {
  std::vector<std::uint32_t> keys;
  std::vector<std::int64_t> values;
  std::string text;
  engine_test::GroupBy groups;
  mapreduce::WordCount words;
};

Work make_work(int t) {
  Work w;
  const std::size_t n = (sanitizer() ? 20000 : 600000) + 777 * t;  // sizes differ: engines regrow
  w.keys = mapreduce::zipf_keys_u32(n, t ? 300 : 80000, 1.0, 31 + t);
  std::mt19937_64 rng(40 + t);
  w.values.resize(n);
  for (auto& v : w.values) v = std::int64_t(rng() % 2000001) - 1000000;
  w.text = mapreduce::zipf_text(sanitizer() ? 30000 : 800000, mapreduce::make_vocabulary(3000, 5 + t), 1.0, 9 + t);
  w.groups = test::cpu_groupby(w.keys, w.values);
  w.words = test::cpu_wordcount(w.text);
  return w;
}

// The group-by on the chained engine (the seed engine of user jobs), as mapreduce::groupby runs it.
std::string chained_groupby(const Work& w) {
  engine_test::Options o;
  o.device = Device::gpu;
  o.mode = engine_test::Options::Mode::chained;
  o.tables = engine_test::Options::Tables::direct;  // no tuning run: the calls stay concurrent
  const auto g = engine_test::groupby(DType::u32, w.keys.data(), w.keys.size(), DType::i64, w.values.data(),
                                      w.values.size(), true, o);
  const std::string diff = test::group_difference(g, w.groups);
  return diff.empty() ? diff : "chained group-by: " + diff;
}

std::string gpu_wordcount(const Work& w) {
  mapreduce::WordCountOptions wc;
  wc.engine.device = Device::gpu;
  wc.engine.tables = engine_test::Options::Tables::direct;
  return mapreduce::wordcount(w.text, wc).words == w.words.words ? std::string() : "word count differs";
}

}  // namespace

TEST(EngineContextThreads, WordCountAndChainedGroupByAtOnce) {
  TANDEM_REQUIRE_GPU();
  const int rounds = sanitizer() ? 2 : 6;
  const std::vector<Work> work{make_work(0), make_work(1)};
  std::vector<std::string> failures(2);
  std::barrier start(2);  // each round's calls begin together
  auto worker = [&](int t) {
    try {
      TANDEM_CUDA(cudaSetDevice(0));
      for (int r = 0; r < rounds; ++r) {
        start.arrive_and_wait();
        const bool words_first = (t + r) % 2 == 0;  // in odd rounds both threads run the same job
        for (int job = 0; job < 2 && failures[t].empty(); ++job) {
          const std::string f = (job == 0) == words_first ? gpu_wordcount(work[t]) : chained_groupby(work[t]);
          if (!f.empty()) failures[t] = f + " (round " + std::to_string(r) + ")";
        }
      }
    } catch (const std::exception& e) {
      failures[t] = e.what();
      start.arrive_and_drop();
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  for (int t = 0; t < 2; ++t) EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];

  // The group-by's engines were returned to the pool in the library's context of device 0.
  using Chained = mapreduce::gpu_engine::Engine<mapreduce::GroupByJob<std::uint32_t, std::int64_t>>;
  TANDEM_CUDA(cudaSetDevice(0));
  tandem::detail::DeviceContext& device = tandem::detail::current_device();
  const std::size_t idle = device.part<tandem::detail::DevicePool<Chained>>().idle(device.device());
  EXPECT_GE(idle, 1u) << "the chained engines are not kept in the library's device context";
  EXPECT_LE(idle, 2u) << "more engines than concurrent callers";
}

// Both threads run the chained engine's hot-key pass kernel (u32 counts) with shared pools of
// different sizes: each launch needs its own dynamic shared-memory limit on the one device, which
// only ever rises (gpu::allow_dynamic_shared); a limit lowered by one thread between the other's
// setting and launch would fail that launch.
TEST(EngineContextThreads, ChainedKernelWithTwoSharedSizesAtOnce) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 50000 : 1000000;
  const int rounds = sanitizer() ? 2 : 20;
  const auto keys = mapreduce::zipf_keys_u32(n, 200000, 1.0, 3);
  engine_test::Options cpu;
  cpu.device = Device::cpu;
  const auto want = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, cpu);
  std::vector<std::string> failures(2);
  auto worker = [&](int t) {
    try {
      TANDEM_CUDA(cudaSetDevice(0));
      engine_test::Options o;
      o.device = Device::gpu;
      o.mode = engine_test::Options::Mode::chained;
      o.tables = engine_test::Options::Tables::direct;
      o.hot_keys = true;
      o.shared_entries = t ? 4096 : 256;  // pools of about 7 KB and 112 KiB
      for (int r = 0; r < rounds && failures[t].empty(); ++r) {
        const auto got = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
        const std::string diff = test::group_difference(got, want);
        if (!diff.empty()) failures[t] = diff + " (round " + std::to_string(r) + ")";
        else if (got.gpu.shared_hits == 0) failures[t] = "no shared-pool hits (round " + std::to_string(r) + ")";
      }
    } catch (const std::exception& e) {
      failures[t] = e.what();
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  for (int t = 0; t < 2; ++t) EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
}
