// Host threads sharing GPUs: four threads run group-bys (hash and chained engines), word counts (of
// text in memory and of files, through the shared pinned staging slots) and sorts (host pipeline and device-resident)
// on one GPU at once, and a group-by alternates between devices; every result is checked against one computed alone on
// the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "cpu_answers.hpp"
#include "gpu/engine_groupby.hpp"
#include "tandem/core/device.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/sort.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

// One thread's inputs and the answers computed alone on the CPU.
struct Work {
  std::vector<std::uint32_t> keys;
  std::vector<std::int64_t> values;  // integer sums are exact on every engine
  std::string text;
  std::vector<std::uint64_t> to_sort;
  engine_test::GroupBy groups;
  mapreduce::WordCount words;
  std::vector<std::uint64_t> sorted;
};

Work make_work(int t) {
  Work w;
  const std::size_t n = (sanitizer() ? 20000 : 400000) + 1000 * t;  // sizes differ: engines regrow
  w.keys = mapreduce::zipf_keys_u32(n, t % 2 ? 200 : 50000, 1.0, 7 + t);
  std::mt19937_64 rng(20 + t);
  w.values.resize(n);
  for (auto& v : w.values) v = std::int64_t(rng() % 2000001) - 1000000;
  w.text = mapreduce::zipf_text(sanitizer() ? 30000 : 600000, mapreduce::make_vocabulary(2000, t + 1), 1.0, t + 1);
  w.to_sort.resize(n / 2);
  for (auto& x : w.to_sort) x = rng();
  w.groups = test::cpu_groupby(w.keys, w.values);
  w.words = test::cpu_wordcount(w.text);
  w.sorted = w.to_sort;
  std::sort(w.sorted.begin(), w.sorted.end());
  return w;
}

bool same_groups(const engine_test::GroupBy& a, const engine_test::GroupBy& b) {
  return test::group_difference(a, b).empty();
}

engine_test::GroupBy gpu_groupby(const Work& w, engine_test::Options::Mode mode) {
  engine_test::Options o;
  o.device = Device::gpu;
  o.mode = mode;
  return engine_test::groupby(DType::u32, w.keys.data(), w.keys.size(), DType::i64, w.values.data(), w.values.size(),
                              true, o);
}

// Sorts a copy of w.to_sort on the device, on this thread's own non-blocking stream.
std::vector<std::uint64_t> sort_on_device(const Work& w, cudaStream_t s) {
  const std::size_t n = w.to_sort.size();
  gpu::DeviceBuffer<std::uint64_t> d(n);
  TANDEM_CUDA(cudaMemcpyAsync(d.data(), w.to_sort.data(), n * 8, cudaMemcpyHostToDevice, s));
  sort_device(d.data(), n, SortOptions{}, s);
  std::vector<std::uint64_t> out(n);
  TANDEM_CUDA(cudaMemcpyAsync(out.data(), d.data(), n * 8, cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  return out;
}

}  // namespace

TEST(GpuConcurrent, FourHostThreadsShareOneGpu) {
  TANDEM_REQUIRE_GPU();
  const int threads = 4, rounds = sanitizer() ? 2 : 5;
  TempDir dir;
  std::vector<Work> work;
  std::vector<std::string> text_files;
  for (int t = 0; t < threads; ++t) {
    work.push_back(make_work(t));
    text_files.push_back(dir.file("text" + std::to_string(t)));
    std::ofstream(text_files.back(), std::ios::binary)
        .write(work.back().text.data(), std::streamsize(work.back().text.size()));
  }
  std::vector<std::string> failures(threads);
  auto worker = [&](int t) {
    try {
      TANDEM_CUDA(cudaSetDevice(0));
      gpu::Stream s;
      const Work& w = work[t];
      for (int r = 0; r < rounds && failures[t].empty(); ++r) {
        const std::string at = " (round " + std::to_string(r) + ")";
        const auto mode = (r + t) % 3 == 2 ? engine_test::Options::Mode::chained : engine_test::Options::Mode::hash;
        if (!same_groups(gpu_groupby(w, mode), w.groups)) failures[t] = "group-by" + at;
        mapreduce::WordCountOptions wc;
        wc.engine.device = Device::gpu;
        if (mapreduce::wordcount(w.text, wc).words != w.words.words) failures[t] = "word count" + at;
        if (mapreduce::wordcount_files({text_files[t]}, wc).words != w.words.words)
          failures[t] = "word count of a file" + at;
        auto keys = w.to_sort;
        SortOptions o;
        o.device = Device::gpu;
        tandem::sort(std::span<std::uint64_t>(keys), o);
        if (keys != w.sorted) failures[t] = "sort (host pipeline)" + at;
        if (sort_on_device(w, s) != w.sorted) failures[t] = "sort_device" + at;
      }
    } catch (const std::exception& e) {
      failures[t] = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
}

// A group-by on one device, then on another, then back: each device's engines keep their own
// buffers (a device switch used to hand the engine of the first device to the second).
TEST(GpuConcurrent, GroupByAlternatingDevices) {
  TANDEM_REQUIRE_GPU();
  if (gpu_count() < 2) GTEST_SKIP() << "one GPU";
  const Work w = make_work(1);
  const Work big = make_work(2);
  for (int round = 0; round < 3; ++round)
    for (int dev : {0, 1}) {
      TANDEM_CUDA(cudaSetDevice(dev));
      EXPECT_TRUE(
          same_groups(gpu_groupby(round % 2 ? big : w, engine_test::Options::Mode::hash), (round % 2 ? big : w).groups))
          << "device " << dev << " round " << round;
      EXPECT_TRUE(same_groups(gpu_groupby(w, engine_test::Options::Mode::chained), w.groups))
          << "chained, device " << dev;
    }
  TANDEM_CUDA(cudaSetDevice(0));
}
