// tandem::cached_memory / release_cached_memory: what the pools keep after sorts and word counts,
// and giving it back, also while another thread keeps sorting.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tandem/core/memory.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/sort.hpp"

using namespace tandem;

namespace {

std::vector<std::uint32_t> random_keys(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> v(n);
  for (auto& x : v) x = static_cast<std::uint32_t>(rng());
  return v;
}

void cpu_sort(std::vector<std::uint32_t>& v) {
  SortOptions o;
  o.device = Device::cpu;
  o.threads = 2;
  tandem::sort(std::span<std::uint32_t>(v), o);
}

std::string words(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string t;
  for (std::size_t i = 0; i < n; ++i) {
    t += 'w';
    t += std::to_string(rng() % 50000);
    t += ' ';
  }
  return t;
}

}  // namespace

TEST(CachedMemory, SortAndWordCountKeepBlocksUntilReleased) {
  release_cached_memory();
  EXPECT_EQ(cached_memory().total(), 0u);
  auto keys = random_keys(std::size_t{1} << 20, 1);  // 4 MiB: its scratch is a pooled block
  cpu_sort(keys);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_GE(cached_memory().scratch_bytes, keys.size() * sizeof(std::uint32_t));

  const std::string text = words(200000, 2);  // ~1.5 MB: thread tables of 64 KiB and more
  mapreduce::WordCountOptions o;
  o.engine.device = Device::cpu;
  o.engine.threads = 2;
  const auto r = mapreduce::wordcount(text, o);
  EXPECT_EQ(r.total_words, 200000u);
  EXPECT_GT(cached_memory().word_table_bytes, 0u);

  release_cached_memory();
  EXPECT_EQ(cached_memory().scratch_bytes, 0u);
  EXPECT_EQ(cached_memory().word_table_bytes, 0u);
}

TEST(CachedMemory, ReleaseWhileAnotherThreadSorts) {
  std::thread sorter([] {
    for (int i = 0; i < 6; ++i) {
      auto keys = random_keys(std::size_t{1} << 20, 10 + i);
      auto want = keys;
      std::sort(want.begin(), want.end());
      cpu_sort(keys);
      EXPECT_EQ(keys, want);
    }
  });
  for (int i = 0; i < 200; ++i) {
    release_cached_memory();
    std::this_thread::yield();
  }
  sorter.join();
  release_cached_memory();
  EXPECT_EQ(cached_memory().total(), 0u);
}
