// dist::sort_device: keys in each rank's GPU memory, sorted across ranks (through NCCL when every
// rank has a GPU of its own, else staged through host memory). Skips without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "dist_helpers.hpp"
#include "tandem/core/device.hpp"

#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

namespace tandem::dist::test {
namespace {

template <class K>
void check_device_sort(std::vector<K> keys, bool descending) {
  Context& ctx = context();
  const std::vector<K> all = sorted_whole(keys, descending);
  SortOptions opts = cpu_sort_options(descending);
  gpu::DeviceBuffer<K> d(keys.size());
  ASSERT_EQ(cudaMemcpy(d.data(), keys.data(), keys.size() * sizeof(K), cudaMemcpyHostToDevice), cudaSuccess);
  const DistReport r = dist::sort_device(ctx, d, opts);
  std::vector<K> got(d.size());
  ASSERT_EQ(cudaMemcpy(got.data(), d.data(), got.size() * sizeof(K), cudaMemcpyDeviceToHost), cudaSuccess);
  const auto [begin, length] = even_slice(all.size(), ctx.rank(), ctx.size());
  ASSERT_EQ(got.size(), length);
  EXPECT_TRUE(same_bits(
      got, std::vector<K>(all.begin() + std::ptrdiff_t(begin), all.begin() + std::ptrdiff_t(begin + length))));
  bool noted = false;
  for (const auto& n : r.report.notes) noted |= n.rfind("exchange: ", 0) == 0;
  EXPECT_TRUE(noted);
}

TEST(DistSortDevice, EqualsTheHostSortOfEveryRanksKeys) {
  if (tandem::gpu_count() == 0) GTEST_SKIP() << "no GPU";
  const Context& ctx = context();
  std::mt19937_64 rng(31 + std::uint64_t(ctx.rank()));
  std::vector<std::uint32_t> u(100003 + 17 * std::size_t(ctx.rank()));
  for (auto& k : u) k = std::uint32_t(rng());
  check_device_sort(u, false);
  check_device_sort(u, true);
  std::vector<double> f(50000);
  for (auto& k : f) k = double(std::int64_t(rng() % 2001) - 1000) / 4;  // many duplicates, -0.0 absent but 0 present
  f[0] = -0.0;
  check_device_sort(f, false);
  check_device_sort(std::vector<std::uint64_t>(ctx.rank() == 0 ? 70000 : 0, 42), false);  // all equal, one rank
}

TEST(DistSortDevice, SkewNarrowRangesAndEmptyRanks) {
  if (tandem::gpu_count() == 0) GTEST_SKIP() << "no GPU";
  const Context& ctx = context();
  std::mt19937_64 rng(77 + std::uint64_t(ctx.rank()));
  // Nine keys in ten equal: one bin holds nearly everything and the rebalance moves most keys.
  std::vector<std::uint32_t> skew(60000 + 1000 * std::size_t(ctx.rank()));
  for (auto& k : skew) k = rng() % 10 ? 7u : std::uint32_t(rng());
  check_device_sort(skew, false);
  check_device_sort(skew, true);
  // Keys that differ in their lowest bits only, negative keys, and a range of two values.
  std::vector<std::uint64_t> narrow(30000);
  for (auto& k : narrow) k = 0xfedcba9876543200ull + rng() % 37;
  check_device_sort(narrow, false);
  std::vector<std::int32_t> negative(40000);
  for (auto& k : negative) k = std::int32_t(rng() % 101) - 50;
  check_device_sort(negative, true);
  std::vector<float> two(20000);
  for (auto& k : two) k = rng() % 2 ? -0.0f : 0.0f;
  check_device_sort(two, false);
  // No keys anywhere; keys on the last rank only.
  check_device_sort(std::vector<std::uint32_t>{}, false);
  std::vector<std::int64_t> last(ctx.rank() == ctx.size() - 1 ? 12345 : 0);
  for (auto& k : last) k = std::int64_t(rng());
  check_device_sort(last, false);
}

// Pairs: the same slices as a stable sort of every rank's pairs in (rank, position) order.
template <class K, class V>
void check_device_sort_pairs(const std::vector<K>& keys, bool descending) {
  Context& ctx = context();
  std::vector<V> values(keys.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = V(std::uint64_t(ctx.rank()) << 24 | i);
  std::vector<K> all_keys = gather_all(keys, MPI_COMM_WORLD);
  std::vector<V> all_values = gather_all(values, MPI_COMM_WORLD);
  tandem::sort_pairs(std::span<K>(all_keys), std::span<V>(all_values), cpu_sort_options(descending));
  gpu::DeviceBuffer<K> dk(keys.size());
  gpu::DeviceBuffer<V> dv(values.size());
  ASSERT_EQ(cudaMemcpy(dk.data(), keys.data(), keys.size() * sizeof(K), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dv.data(), values.data(), values.size() * sizeof(V), cudaMemcpyHostToDevice), cudaSuccess);
  SortOptions opts;
  opts.descending = descending;
  dist::sort_pairs_device(ctx, dk, dv, opts);
  std::vector<K> got_keys(dk.size());
  std::vector<V> got_values(dv.size());
  ASSERT_EQ(cudaMemcpy(got_keys.data(), dk.data(), dk.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got_values.data(), dv.data(), dv.bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
  const auto [begin, length] = even_slice(all_keys.size(), ctx.rank(), ctx.size());
  ASSERT_EQ(got_keys.size(), length);
  const auto b = std::ptrdiff_t(begin), e = std::ptrdiff_t(begin + length);
  EXPECT_TRUE(same_bits(got_keys, std::vector<K>(all_keys.begin() + b, all_keys.begin() + e)));
  EXPECT_TRUE(same_bits(got_values, std::vector<V>(all_values.begin() + b, all_values.begin() + e)));
}

TEST(DistSortDevice, PairsAreStableAcrossRanks) {
  if (tandem::gpu_count() == 0) GTEST_SKIP() << "no GPU";
  const Context& ctx = context();
  std::mt19937_64 rng(91 + std::uint64_t(ctx.rank()));
  std::vector<std::uint32_t> dup(80000 + 333 * std::size_t(ctx.rank()));
  for (auto& k : dup) k = std::uint32_t(rng() % 500);  // every key on every rank, many times
  check_device_sort_pairs<std::uint32_t, std::uint64_t>(dup, false);
  check_device_sort_pairs<std::uint32_t, std::uint32_t>(dup, true);
  std::vector<double> f(30000);
  for (auto& k : f) k = rng() % 3 == 0 ? -0.0 : double(std::int64_t(rng() % 201) - 100);
  check_device_sort_pairs<double, std::uint64_t>(f, false);
  std::vector<std::int64_t> skew(ctx.rank() == 0 ? 50000 : 7);  // one rank holds nearly all
  for (auto& k : skew) k = rng() % 8 ? 3 : std::int64_t(rng());
  check_device_sort_pairs<std::int64_t, std::uint32_t>(skew, false);
  check_device_sort_pairs<std::uint64_t, std::uint64_t>(std::vector<std::uint64_t>{}, false);
}

}  // namespace
}  // namespace tandem::dist::test
#endif
