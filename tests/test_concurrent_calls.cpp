// Host threads calling the CPU group-by and sorts at once (with the shared tuning cache in play):
// every result is checked against one computed alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tandem/core/device.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/sort.hpp"

using namespace tandem;

namespace {

struct Work {
  std::vector<std::uint32_t> keys;
  std::vector<double> values;
  std::vector<std::uint64_t> to_sort;
};

Work make_work(std::uint64_t seed) {
  Work w;
  std::mt19937_64 rng(seed);
  w.keys = mr::zipf_keys_u32(60000, 2000, 0.8, seed);
  w.values.resize(w.keys.size());
  for (auto& v : w.values) v = double(rng() % 100000) / 8.0 - 5000.0;
  w.to_sort.resize(150000 + seed % 1000);
  for (auto& x : w.to_sort) x = rng();
  return w;
}

mr::GroupBy groupby(const Work& w) {
  mr::Options o;
  o.device = Device::cpu;
  o.threads = 2;
  return mr::groupby(DType::u32, w.keys.data(), w.keys.size(), DType::f64, w.values.data(), w.values.size(), true, o);
}

bool same_rows(const mr::GroupBy& a, const mr::GroupBy& b) {
  if (a.rows.size() != b.rows.size()) return false;
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    const auto &x = a.rows[i], &y = b.rows[i];
    if (x.key_bits != y.key_bits || x.count != y.count || x.dsum != y.dsum || x.dmin != y.dmin || x.dmax != y.dmax)
      return false;
  }
  return true;
}

}  // namespace

TEST(ConcurrentCalls, CpuGroupByAndSortsFromFourThreads) {
  const int threads = 4, rounds = 6;
  std::vector<Work> work;
  std::vector<mr::GroupBy> want_groups;
  std::vector<std::vector<std::uint64_t>> want_sorted;
  for (int t = 0; t < threads; ++t) {
    work.push_back(make_work(100 + t));
    want_groups.push_back(groupby(work.back()));
    want_sorted.push_back(work.back().to_sort);
    std::sort(want_sorted.back().begin(), want_sorted.back().end());
  }
  std::vector<std::string> failures(threads);
  auto worker = [&](int t) {
    for (int r = 0; r < rounds && failures[t].empty(); ++r) {
      if (!same_rows(groupby(work[t]), want_groups[t])) failures[t] = "group-by round " + std::to_string(r);
      SortOptions o;
      o.device = Device::cpu;
      o.threads = 2;
      // radix, the comparison sort, and the bitonic engine (its CPU thread count tuned and cached)
      o.algorithm = r % 3 == 0 ? SortAlgorithm::radix : r % 3 == 1 ? SortAlgorithm::merge : SortAlgorithm::bitonic;
      if (o.algorithm == SortAlgorithm::bitonic) o.threads = 2 * cpu_info().physical_cores + 1;
      auto keys = work[t].to_sort;
      tandem::sort(std::span<std::uint64_t>(keys), o);
      if (keys != want_sorted[t])
        failures[t] = "sort (" + std::string(to_string(o.algorithm)) + ") round " + std::to_string(r);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_TRUE(failures[t].empty()) << "thread " << t << ": " << failures[t];
}
