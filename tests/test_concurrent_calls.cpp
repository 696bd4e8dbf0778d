// Host threads calling the CPU group-by (the table group-by and the MapReduce group-by job) and
// sorts at once (with the shared tuning cache in play): every result is checked against one
// computed alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "tandem/core/device.hpp"
#include "tandem/groupby.hpp"
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
  w.keys = mapreduce::zipf_keys_u32(60000, 2000, 0.8, seed);
  w.values.resize(w.keys.size());
  for (auto& v : w.values) v = double(rng() % 100000) / 8.0 - 5000.0;
  w.to_sort.resize(150000 + seed % 1000);
  for (auto& x : w.to_sort) x = rng();
  return w;
}

Table table_of(const Work& w) {
  Table t;
  t.add(make_column("key", w.keys));
  t.add(make_column("value", w.values));
  return t;
}

Table groupby(const Table& t) {
  const GroupBySpec spec{{"key"}, parse_aggregations("sum(value),count(),min(value),max(value)")};
  return tandem::groupby(t, spec, GroupByOptions{Device::cpu, 2}).table;
}

bool same_table(const Table& a, const Table& b) {
  if (a.num_columns() != b.num_columns() || a.rows() != b.rows()) return false;
  for (std::size_t c = 0; c < a.num_columns(); ++c) {
    const Column &x = a.column(c), &y = b.column(c);
    if (x.name != y.name || x.type != y.type || x.values.size() != y.values.size() ||
        std::memcmp(x.values.data(), y.values.data(), x.values.size()) != 0)
      return false;
  }
  return true;
}

// The MapReduce CPU engine running the group-by job, its pairs in key order.
std::vector<std::pair<std::uint32_t, mapreduce::Agg<double>>> engine_groups(const Work& w) {
  mapreduce::Options o;
  o.device = Device::cpu;
  o.threads = 2;
  auto pairs = mapreduce::cpu_mapreduce(mapreduce::GroupByJob<std::uint32_t, double>{w.keys.data(), w.values.data()},
                                        w.keys.size(), o);
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return pairs;
}

bool same_groups(const std::vector<std::pair<std::uint32_t, mapreduce::Agg<double>>>& a,
                 const std::vector<std::pair<std::uint32_t, mapreduce::Agg<double>>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto &x = a[i].second, &y = b[i].second;
    if (a[i].first != b[i].first || x.count != y.count || x.sum != y.sum || x.min != y.min || x.max != y.max)
      return false;
  }
  return true;
}

}  // namespace

TEST(ConcurrentCalls, CpuGroupByAndSortsFromFourThreads) {
  const int threads = 4, rounds = 6;
  std::vector<Work> work;
  std::vector<Table> tables, want_tables;
  std::vector<std::vector<std::pair<std::uint32_t, mapreduce::Agg<double>>>> want_groups;
  std::vector<std::vector<std::uint64_t>> want_sorted;
  for (int t = 0; t < threads; ++t) {
    work.push_back(make_work(100 + t));
    tables.push_back(table_of(work.back()));
    want_tables.push_back(groupby(tables.back()));
    want_groups.push_back(engine_groups(work.back()));
    want_sorted.push_back(work.back().to_sort);
    std::sort(want_sorted.back().begin(), want_sorted.back().end());
  }
  std::vector<std::string> failures(threads);
  auto worker = [&](int t) {
    for (int r = 0; r < rounds && failures[t].empty(); ++r) {
      if (!same_table(groupby(tables[t]), want_tables[t])) failures[t] = "group-by round " + std::to_string(r);
      if (!same_groups(engine_groups(work[t]), want_groups[t]))
        failures[t] = "MapReduce group-by job round " + std::to_string(r);
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
