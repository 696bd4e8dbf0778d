// GPU paths of tandem::sort against std::stable_sort in tandem's key order: the device-resident
// API, the host pipeline (pageable and pinned; whole-array sort and MSD split with groups copied
// back while the next sorts, skewed data falling back), and the out-of-core path forced by a small
// gpu_memory_limit (host MSD partition, pieces sorted on the GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "sort/device_sort.hpp"
#include "sort/msd_keys32_plan.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/sort.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

bool small() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

template <class K>
std::vector<K> keys_for(std::size_t n, int shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<K> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t r = rng();
    if (shape == 1) r %= 7;                                             // few distinct: one top-8-bit bucket holds all
    if (shape == 4) r = (r % 3 == 0) ? r : r % 1000;                    // 2/3 of the keys in one top bucket (skewed)
    if (shape == 5) r = (r & 1) ? ~std::uint64_t{0} - r % 77 : r % 77;  // two far-apart top buckets
    if (shape == 6) r = 12345;                                          // all equal
    if constexpr (std::is_floating_point_v<K>) {
      v[i] = static_cast<K>(static_cast<std::int64_t>(r % 20001) - 10000) / K(4);
      if (i % 61 == 0) v[i] = std::numeric_limits<K>::quiet_NaN();
      if (i % 67 == 0) v[i] = -std::numeric_limits<K>::quiet_NaN();
      if (i % 11 == 0) v[i] = (i & 1) ? K(-0.0) : K(0.0);
    } else {
      v[i] = static_cast<K>(r);
    }
  }
  auto less = [](K a, K b) { return key_less(a, b); };
  if (shape == 2) std::sort(v.begin(), v.end(), less);
  if (shape == 3) std::sort(v.begin(), v.end(), [&](K a, K b) { return less(b, a); });
  return v;
}

template <class K, class V>
void expect_pairs(const std::vector<K>& in, const std::vector<K>& k, const std::vector<V>& v, bool desc) {
  std::vector<std::size_t> idx(in.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return desc ? key_less(in[b], in[a]) : key_less(in[a], in[b]);
  });
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(to_ordered(k[i]), to_ordered(in[idx[i]])) << "key at " << i << " of " << in.size();
    ASSERT_EQ(v[i], static_cast<V>(idx[i])) << "value at " << i << " of " << in.size();
  }
}

template <class K>
void expect_keys(const std::vector<K>& in, const std::vector<K>& got, bool desc) {
  auto want = in;
  std::stable_sort(want.begin(), want.end(), [&](K a, K b) { return desc ? key_less(b, a) : key_less(a, b); });
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(to_ordered(got[i]), to_ordered(want[i])) << "at " << i;
}

SortOptions gpu_sort_options(bool desc) {
  SortOptions o;
  o.device = Device::gpu;
  o.descending = desc;
  return o;
}

// Sorts a copy of `in` with `o` and checks it against std::stable_sort; returns the Report.
template <class K>
Report sort_checked(const std::vector<K>& in, const SortOptions& o) {
  auto k = in;
  const Report r = tandem::sort(std::span<K>(k), o);
  expect_keys(in, k, o.descending);
  return r;
}

// Stream-ordered copies: an upload precedes what is queued on `s` after it; download waits for `s`.
template <class T>
void upload(const gpu::DeviceBuffer<T>& d, const std::vector<T>& h, cudaStream_t s) {
  if (!h.empty()) TANDEM_CUDA(cudaMemcpyAsync(d.data(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice, s));
}
template <class T>
std::vector<T> download(const gpu::DeviceBuffer<T>& d, cudaStream_t s) {
  std::vector<T> h(d.size());
  if (!h.empty()) TANDEM_CUDA(cudaMemcpyAsync(h.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  return h;
}

std::vector<std::size_t> sizes() {
  if (small()) return {0, 1, 2, 1000, 4097};
  return {0, 1, 2, 3, 1023, 1025, (1u << 16) + 1, (1u << 20) - 1};
}

template <class K>
void host_paths() {
  for (std::size_t n : sizes())
    for (int shape : {0, 1, 2, 3})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " shape=" << shape << " desc=" << desc);
        SortOptions o;
        o.device = Device::gpu;
        o.descending = desc;
        const auto in = keys_for<K>(n, shape, n + shape);
        auto k = in;
        const Report r = tandem::sort(std::span<K>(k), o);
        expect_keys(in, k, desc);
        if (n > 1) {
          EXPECT_EQ(r.details().value("path", ""), "gpu-pipeline");
        }
        if (shape > 1) continue;
        k = in;
        std::vector<std::uint32_t> v(n);
        std::iota(v.begin(), v.end(), 0u);
        sort_pairs(std::span<K>(k), std::span<std::uint32_t>(v), o);
        expect_pairs(in, k, v, desc);
      }
}

// GPU options with the split threshold lowered, so small inputs take the MSD split too.
SortOptions split_options(bool desc) {
  SortOptions o = gpu_sort_options(desc);
  o.gpu_tuning.split_min_elements = 4096;
  return o;
}

template <class K>
void split_paths() {
  std::vector<std::size_t> ns{4095, 4097, 65537};
  // The default threshold, uniform keys, one 32-bit and one 64-bit type (the reference is slow).
  if (!small() && (std::is_same_v<K, std::uint32_t> || std::is_same_v<K, double>)) ns.push_back((1u << 22) + 3);
  for (std::size_t n : ns)
    for (int shape : {0, 1, 2, 3, 4, 5, 6})
      for (bool desc : {false, true}) {
        if (n > 100000 && shape != 0) continue;
        SCOPED_TRACE(testing::Message() << "n=" << n << " shape=" << shape << " desc=" << desc);
        const SortOptions o = split_options(desc);
        const auto in = keys_for<K>(n, shape, n * 5 + shape);
        const Report r = sort_checked(in, o);
        EXPECT_EQ(r.details().value("path", ""), "gpu-pipeline");
        const bool split = r.details().value("gpu_split", false);
        if (n < 4096 || shape == 4 || shape == 6) {
          EXPECT_FALSE(split) << "small, skewed or all equal: one whole-array sort (or none)";
        }
        if (n >= 4096 && (shape == 0 || shape == 1) && std::is_integral_v<K>) {
          EXPECT_TRUE(split) << "uniform: top digit; few distinct: split on the lowest digit";
        }
        if (shape == 2 || shape == 3) continue;
        auto k = in;
        std::vector<std::uint32_t> v(n);
        std::iota(v.begin(), v.end(), 0u);
        sort_pairs(std::span<K>(k), std::span<std::uint32_t>(v), o);
        expect_pairs(in, k, v, desc);
        k = in;
        std::vector<std::uint64_t> v64(n);
        std::iota(v64.begin(), v64.end(), std::uint64_t{0});
        sort_pairs(std::span<K>(k), std::span<std::uint64_t>(v64), o);
        expect_pairs(in, k, v64, desc);
      }
}

}  // namespace

TEST(GpuSortHost, U32) {
  TANDEM_REQUIRE_GPU();
  host_paths<std::uint32_t>();
  split_paths<std::uint32_t>();
}
TEST(GpuSortHost, I32) {
  TANDEM_REQUIRE_GPU();
  host_paths<std::int32_t>();
  split_paths<std::int32_t>();
}
TEST(GpuSortHost, U64) {
  TANDEM_REQUIRE_GPU();
  host_paths<std::uint64_t>();
  split_paths<std::uint64_t>();
}
TEST(GpuSortHost, I64) {
  TANDEM_REQUIRE_GPU();
  host_paths<std::int64_t>();
  split_paths<std::int64_t>();
}
TEST(GpuSortHost, F32) {
  TANDEM_REQUIRE_GPU();
  host_paths<float>();
  split_paths<float>();
}
TEST(GpuSortHost, F64) {
  TANDEM_REQUIRE_GPU();
  host_paths<double>();
  split_paths<double>();
}

TEST(GpuSortHost, PinnedSource) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = small() ? 5000 : (1u << 22) + 5;
  const auto in = keys_for<float>(n, 0, 9);
  gpu::PinnedBuffer<float> p(n);
  std::copy(in.begin(), in.end(), p.data());
  SortOptions o;
  o.device = Device::gpu;
  tandem::sort(p.span(), o);
  expect_keys(in, std::vector<float>(p.data(), p.data() + n), false);
}

TEST(GpuSortHost, OutOfCoreWithSmallMemoryLimit) {
  TANDEM_REQUIRE_GPU();
  // 64 MiB budget: chunks of 2^20 elements (the smallest), so 3 Mi + 7 keys make 4 runs.
  const std::size_t n = small() ? (1u << 20) + 7 : (3u << 20) + 7;
  for (bool desc : {false, true}) {
    SortOptions o;
    o.device = Device::gpu;
    o.descending = desc;
    o.gpu_memory_limit = std::size_t{64} << 20;
    const auto in = keys_for<double>(n, 0, 5);
    auto k = in;
    const Report r = tandem::sort(std::span<double>(k), o);
    EXPECT_EQ(r.details().value("path", ""), "gpu-out-of-core");
    EXPECT_GE(r.details().value("pieces", 0), 2);
    expect_keys(in, k, desc);
    const auto few = keys_for<std::uint32_t>(n, 1, 6);
    auto fk = few;
    std::vector<std::uint64_t> v(n);
    std::iota(v.begin(), v.end(), std::uint64_t{0});
    sort_pairs(std::span<std::uint32_t>(fk), std::span<std::uint64_t>(v), o);
    expect_pairs(few, fk, v, desc);
  }
}

// sort_copy of host data: the pipeline uploads from the source and leaves it as it was; the
// out-of-core path copies it first. The outputs start poisoned.
TEST(GpuSortHost, SortedCopyFromAReadOnlySource) {
  TANDEM_REQUIRE_GPU();
  const std::size_t big = small() ? (1u << 20) + 7 : (3u << 20) + 7;
  for (std::size_t n : {std::size_t{1}, std::size_t{4097}, big})
    for (bool out_of_core : {false, true}) {
      if (out_of_core && n != big) continue;
      SCOPED_TRACE(testing::Message() << "n=" << n << " out_of_core=" << out_of_core);
      SortOptions o;
      o.device = Device::gpu;
      if (out_of_core) o.gpu_memory_limit = std::size_t{64} << 20;
      const auto in = keys_for<float>(n, 0, n + 3);
      std::vector<float> out(n, 7.5f);
      const Report r = tandem::sort_copy(std::span<const float>(in), std::span<float>(out), o);
      if (n > 1) {
        EXPECT_EQ(r.details().value("path", ""), out_of_core ? "gpu-out-of-core" : "gpu-pipeline");
      }
      expect_keys(in, out, false);
      const auto again = keys_for<float>(n, 0, n + 3);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(to_ordered(in[i]), to_ordered(again[i])) << "source at " << i;
      const auto few = keys_for<std::uint64_t>(n, 1, n + 4);
      std::vector<std::uint32_t> v(n);
      std::iota(v.begin(), v.end(), 0u);
      std::vector<std::uint64_t> ko(n, 99);
      std::vector<std::uint32_t> vo(n, 99);
      o.descending = true;
      sort_pairs_copy(std::span<const std::uint64_t>(few), std::span<const std::uint32_t>(v),
                      std::span<std::uint64_t>(ko), std::span<std::uint32_t>(vo), o);
      expect_pairs(few, ko, vo, true);
    }
}

TEST(GpuSortDevice, KeysAndPairsInPlace) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  for (std::size_t n : sizes())
    for (bool desc : {false, true})
      for (auto alg : {SortAlgorithm::radix, SortAlgorithm::merge}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " desc=" << desc << " alg=" << to_string(alg));
        SortOptions o;
        o.descending = desc;
        o.algorithm = alg;
        // Uploads on the sort's stream (a plain cudaMemcpy from pageable memory may still be
        // landing on the legacy stream, which the non-blocking `s` does not wait for).
        const auto in = keys_for<float>(n, 0, n * 3 + 1);
        gpu::DeviceBuffer<float> d(n);
        upload(d, in, s);
        sort_device(d.data(), n, o, s);
        expect_keys(in, download(d, s), desc);

        const auto ik = keys_for<std::int64_t>(n, 1, n + 2);
        gpu::DeviceBuffer<std::int64_t> dk(n);
        gpu::DeviceBuffer<std::uint32_t> dv(n);
        std::vector<std::uint32_t> iv(n);
        std::iota(iv.begin(), iv.end(), 0u);
        upload(dk, ik, s);
        upload(dv, iv, s);
        sort_pairs_device(dk.data(), dv.data(), n, o, s);
        expect_pairs(ik, download(dk, s), download(dv, s), desc);
      }
}

// sort_device_copy: the output sorted, the input untouched (poisoned output first), for keys read
// by the sort's first pass (unsigned ascending) and keys mapped into the output (the rest).
template <class K>
void check_sorted_copy(std::size_t n, bool desc, SortAlgorithm alg, int shape, cudaStream_t s,
                       std::size_t msd_min = 0) {
  SCOPED_TRACE(testing::Message() << "n=" << n << " desc=" << desc << " alg=" << to_string(alg) << " shape=" << shape
                                  << " key bytes=" << sizeof(K) << (std::is_floating_point_v<K> ? " float" : ""));
  SortOptions o;
  o.descending = desc;
  o.algorithm = alg;
  o.gpu_tuning.msd_keys32_min_elements = msd_min;
  const auto in = keys_for<K>(n, shape, n * 5 + 7);
  gpu::DeviceBuffer<K> din(n), dout(n);
  upload(din, in, s);
  if (n) TANDEM_CUDA(cudaMemsetAsync(dout.data(), 0xA5, dout.bytes(), s));
  sort_device_copy(din.data(), dout.data(), n, o, s);
  expect_keys(in, download(dout, s), desc);
  const auto after = download(din, s);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(to_ordered(after[i]), to_ordered(in[i])) << "input changed at " << i;
}

// sort_device in place, checked against std::stable_sort.
template <class K>
void check_in_place(const std::vector<K>& in, bool desc, cudaStream_t s, std::size_t msd_min = 0) {
  gpu::DeviceBuffer<K> d(in.size());
  upload(d, in, s);
  SortOptions o;
  o.descending = desc;
  o.gpu_tuning.msd_keys32_min_elements = msd_min;
  sort_device(d.data(), in.size(), o, s);
  expect_keys(in, download(d, s), desc);
}

TEST(GpuSortDevice, SortedCopyLeavesTheInput) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  for (std::size_t n : sizes())
    for (bool desc : {false, true}) {
      check_sorted_copy<std::uint32_t>(n, desc, SortAlgorithm::radix, 0, s);
      check_sorted_copy<std::uint64_t>(n, desc, SortAlgorithm::radix, 0, s);
      check_sorted_copy<std::int32_t>(n, desc, SortAlgorithm::radix, 0, s);
      check_sorted_copy<float>(n, desc, SortAlgorithm::radix, 0, s);
      check_sorted_copy<double>(n, desc, SortAlgorithm::merge, 0, s);
    }
  for (int shape : {1, 2, 3, 4, 5, 6})
    check_sorted_copy<std::uint32_t>(small() ? 4097 : 300001, false, SortAlgorithm::radix, shape, s);
}

TEST(GpuSortDevice, SortedCopyOntoItself) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  const auto in = keys_for<std::uint32_t>(100003, 0, 3);
  gpu::DeviceBuffer<std::uint32_t> d(in.size());
  upload(d, in, s);
  sort_device_copy(d.data(), d.data(), in.size(), {}, s);
  expect_keys(in, download(d, s), false);
}

// Keys-only 32-bit sorts run CUB's onesweep with tandem's wider tile; sizes around its tile
// (512 x 22 keys) and the single-tile path, every key type that maps to 32 bits.
TEST(GpuSortDevice, WideTileSizes) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  const std::size_t tile = 512 * 22;
  std::vector<std::size_t> ns = {tile - 1, tile, tile + 1, 2 * tile + 3, 4000, 9000};
  if (!small()) ns.push_back((std::size_t{1} << 24) + 12345);
  for (std::size_t n : ns) {
    for (int shape : {0, 1, 6}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " shape=" << shape);
      check_in_place(keys_for<std::uint32_t>(n, shape, n), false, s);
    }
    check_in_place(keys_for<float>(n, 0, n + 1), true, s);
  }
}

// The workspace shared by every sort_device call of a device, under load: host threads on their
// own non-blocking streams, each round a fresh buffer of a new size (the workspace grows while
// other streams' sorts are in flight), keys and pairs, radix and merge; one thread uploads on a
// second stream and orders the sort after it with an event (the contract's recipe). Every result
// is checked.
TEST(GpuSortDevice, ConcurrentStreamsFreshBuffers) {
  TANDEM_REQUIRE_GPU();
  const int threads = 3, rounds = small() ? 6 : 60;
  std::vector<std::string> failures(threads);
  auto worker = [&](int t) {
    gpu::Stream s, side;
    gpu::Event uploaded(false);
    std::mt19937_64 rng(1000 + t);
    for (int i = 0; i < rounds && failures[t].empty(); ++i) {
      const std::size_t n = 1 + rng() % (small() ? 5000 : 300000);
      SortOptions o;
      o.algorithm = i % 3 == 2 ? SortAlgorithm::merge : SortAlgorithm::radix;
      o.descending = i % 2;
      const auto in = keys_for<float>(n, 0, rng());
      std::vector<std::uint32_t> iv(n);
      std::iota(iv.begin(), iv.end(), 0u);
      gpu::DeviceBuffer<float> dk(n);
      gpu::DeviceBuffer<std::uint32_t> dv(n);
      if (t == 0) {  // uploaded on another stream: the sort's stream waits for it on the device
        upload(dk, in, side);
        upload(dv, iv, side);
        uploaded.record(side);
        TANDEM_CUDA(cudaStreamWaitEvent(s, uploaded.get(), 0));
      } else {
        upload(dk, in, s);
        upload(dv, iv, s);
      }
      if (i % 2) sort_pairs_device(dk.data(), dv.data(), n, o, s.get());
      else sort_device(dk.data(), n, o, s.get());
      const auto got = download(dk, s);
      const auto vals = download(dv, s);
      std::vector<std::size_t> idx(n);
      std::iota(idx.begin(), idx.end(), std::size_t{0});
      std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
        return o.descending ? key_less(in[b], in[a]) : key_less(in[a], in[b]);
      });
      for (std::size_t j = 0; j < n; ++j) {
        const bool key_ok = to_ordered(got[j]) == to_ordered(in[idx[j]]);
        const bool value_ok = i % 2 == 0 ? vals[j] == iv[j] : vals[j] == idx[j];
        if (!key_ok || !value_ok) {
          failures[t] = (testing::Message() << "thread " << t << " round " << i << " n=" << n << ": "
                                            << (key_ok ? "value" : "key") << " at " << j)
                            .GetString();
          break;
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& th : pool) th.join();
  for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f;
}

TEST(GpuSortHost, AutoPicksAndReportsAPath) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = small() ? 3000 : 1u << 22;
  auto in = keys_for<std::uint32_t>(n, 0, 77);
  auto k = in;
  const Report r = tandem::sort(std::span<std::uint32_t>(k), SortOptions{});
  const std::string path = r.details().value("path", "");
  EXPECT_TRUE(path == "gpu-pipeline" || path == "cpu-radix") << path;
  EXPECT_FALSE(r.stages.empty());
  expect_keys(in, k, false);
  release_sort_workspace();
}

TEST(GpuSortSplit, PinnedKeysPageableValues) {
  TANDEM_REQUIRE_GPU();
  // Keys go back by direct DMA, values through the staged slots: both wait per group.
  const std::size_t n = small() ? 70001 : (1u << 22) + 9;
  for (bool desc : {false, true}) {
    const auto in = keys_for<std::int64_t>(n, 0, 31 + desc);
    gpu::PinnedBuffer<std::int64_t> p(n);
    std::copy(in.begin(), in.end(), p.data());
    std::vector<std::uint32_t> v(n);
    std::iota(v.begin(), v.end(), 0u);
    const SortOptions o = split_options(desc);
    const Report r = sort_pairs(p.span(), std::span<std::uint32_t>(v), o);
    EXPECT_TRUE(r.details().value("gpu_split", false));
    expect_pairs(in, std::vector<std::int64_t>(p.data(), p.data() + n), v, desc);
  }
}

// Keys-only uploads partitioned on the top digit batch by batch during the upload: the groups
// are gathered from every batch. Where the plan does not split on the top digit (few distinct,
// skewed, all equal) or a group is too large (two far-apart buckets), the sort runs on the keys
// the batches left behind, a permutation of the input.
template <class K>
void upload_batch_paths() {
  for (std::size_t n : {std::size_t{65537}, std::size_t{300007}})
    for (int shape : {0, 1, 2, 3, 4, 5, 6})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " shape=" << shape << " desc=" << desc);
        SortOptions o = split_options(desc);
        o.gpu_tuning.pipeline_chunk_bytes = 16 << 10;  // small inputs cut into several upload batches
        const auto in = keys_for<K>(n, shape, n * 7 + shape);
        const Report r = sort_checked(in, o);
        const auto batches = r.details().value("gpu_upload_batches", std::size_t{0});
        if (std::is_integral_v<K> && (shape == 0 || shape == 2 || shape == 3)) {
          EXPECT_GT(batches, 1u) << "uniform keys split on the top digit: groups gathered from the upload batches";
        }
        if (std::is_integral_v<K> && (shape == 1 || shape == 4 || shape == 5 || shape == 6)) {
          EXPECT_EQ(batches, 0u);
        }
        if (shape != 0) continue;
        auto k = in;  // pairs keep the plain MSD pass (stable), with the same small chunks
        std::vector<std::uint32_t> v(n);
        std::iota(v.begin(), v.end(), 0u);
        sort_pairs(std::span<K>(k), std::span<std::uint32_t>(v), o);
        expect_pairs(in, k, v, desc);
      }
}

TEST(GpuSortSplit, UploadBatchesU32) {
  TANDEM_REQUIRE_GPU();
  upload_batch_paths<std::uint32_t>();
}
TEST(GpuSortSplit, UploadBatchesI64) {
  TANDEM_REQUIRE_GPU();
  upload_batch_paths<std::int64_t>();
}
TEST(GpuSortSplit, UploadBatchesF32) {
  TANDEM_REQUIRE_GPU();
  upload_batch_paths<float>();
}

TEST(GpuSortHost, OutOfCoreSkewedAndEqual) {
  TANDEM_REQUIRE_GPU();
  // Keys that agree on their top bits (the partition skips those digits and recurses), all-equal
  // keys (left in input order, values included), and u64 pairs, with a 64 MiB budget.
  const std::size_t n = small() ? (1u << 20) + 3 : (5u << 20) + 3;
  SortOptions o;
  o.device = Device::gpu;
  o.gpu_memory_limit = std::size_t{64} << 20;
  for (bool desc : {false, true}) {
    o.descending = desc;
    auto in = keys_for<std::uint64_t>(n, 0, 8);
    for (auto& x : in) x = 0x1234000000000000ull | (x >> 40);
    auto k = in;
    std::vector<std::uint32_t> v(n);
    std::iota(v.begin(), v.end(), 0u);
    Report r = sort_pairs(std::span<std::uint64_t>(k), std::span<std::uint32_t>(v), o);
    EXPECT_EQ(r.details().value("path", ""), "gpu-out-of-core");
    expect_pairs(in, k, v, desc);
    std::vector<float> eq(n, 2.5f);
    std::vector<std::uint64_t> ev(n);
    std::iota(ev.begin(), ev.end(), std::uint64_t{0});
    r = sort_pairs(std::span<float>(eq), std::span<std::uint64_t>(ev), o);
    EXPECT_EQ(r.details().value("pieces", -1), 0);
    expect_pairs(std::vector<float>(n, 2.5f), eq, ev, desc);
  }
}

// tandem's MSD sort of 32-bit device keys. It takes 2^26 keys and more by default; the tests lower
// that so small arrays take it too (sub-buckets of a few keys, part tiles everywhere).
namespace {

constexpr std::size_t kMsdLow = std::size_t{1} << 12;

// Options whose device sorts of 32-bit keys take the MSD sort from kMsdLow keys up.
SortOptions msd_low_options() {
  SortOptions o;
  o.gpu_tuning.msd_keys32_min_elements = kMsdLow;
  return o;
}

// Whether the MSD sort takes the keys (called directly, as sort_device does, from min_elements
// keys up; 0: the default threshold); when it does, its sorted copy is checked and the input is
// left as it was.
bool msd_takes(const std::vector<std::uint32_t>& in, cudaStream_t s, std::size_t min_elements = kMsdLow) {
  const std::size_t n = in.size();
  gpu::DeviceBuffer<std::uint32_t> d(n), out(n);
  upload(d, in, s);
  TANDEM_CUDA(cudaMemsetAsync(out.data(), 0xA5, out.bytes(), s));
  bool took = false;
  {
    auto& ws = detail::sort_workspace();
    std::lock_guard lock(ws.mu);
    ws.begin(s);
    took = detail::msd_sort_keys32(d.data(), out.data(), n, ws, s, min_elements);
    ws.end(s);
  }
  if (took) expect_keys(in, download(out, s), false);
  EXPECT_EQ(download(d, s), in) << "input changed";
  return took;
}

}  // namespace

TEST(GpuSortMsd, TakesSpreadKeysAndLeavesSkewedOnesToCub) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  const std::size_t n = small() ? 50001 : 1000003;
  EXPECT_TRUE(msd_takes(keys_for<std::uint32_t>(n, 0, 1), s)) << "uniform";
  EXPECT_TRUE(msd_takes(keys_for<std::uint32_t>(n, 2, 2), s)) << "sorted";
  EXPECT_TRUE(msd_takes(keys_for<std::uint32_t>(n, 3, 3), s)) << "reverse";
  EXPECT_FALSE(msd_takes(keys_for<std::uint32_t>(n, 1, 4), s)) << "7 distinct keys share one 16-bit prefix";
  EXPECT_FALSE(msd_takes(keys_for<std::uint32_t>(n, 4, 5), s)) << "2/3 of the keys below 1000";
  EXPECT_FALSE(msd_takes(keys_for<std::uint32_t>(n, 5, 6), s)) << "two far-apart prefixes";
  EXPECT_FALSE(msd_takes(keys_for<std::uint32_t>(n, 6, 7), s)) << "all equal";
  EXPECT_FALSE(msd_takes(keys_for<std::uint32_t>(4095, 0, 8), s)) << "below the threshold";
  // A prefix of exactly one block's worth of equal keys is still taken.
  auto full = keys_for<std::uint32_t>(n, 0, 9);
  for (auto& k : full)
    if ((k >> 16) == 0x1234u) k ^= 0x10000u;  // the prefix holds only the keys set below
  for (std::size_t i = 0; i < detail::kLowSortMax; ++i) full[i * 97 % n] = 0x12340000u + std::uint32_t(i % 5);
  EXPECT_TRUE(msd_takes(full, s)) << "a prefix holding " << detail::kLowSortMax << " keys";
  // Prefixes in each of the 512-thread classes (above 8,192 keys), their low bits spread.
  auto big = keys_for<std::uint32_t>(n, 0, 10);
  std::size_t at = 0;
  std::uint32_t x = 12345;
  std::uint32_t prefix = 0x0007u;
  for (std::uint32_t size : {8193u, 13000u, 17000u, 23000u, 24576u}) {
    prefix += 0x1000u;
    for (auto& k : big)
      if ((k >> 16) == prefix) k ^= 0x10000u;
    for (std::uint32_t i = 0; i < size; ++i, at += 7) {
      x = x * 1664525u + 1013904223u;
      big[at % n] = prefix << 16 | (x >> 16);
    }
  }
  EXPECT_TRUE(msd_takes(big, s)) << "prefixes of 8,193 to 24,576 keys";
}

TEST(GpuSortMsd, EveryThirtyTwoBitKeyTypeInPlaceAndCopied) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  std::vector<std::size_t> ns = {4096, 4097, (1u << 16) + 3};
  if (!small()) ns.push_back((1u << 20) + 11);
  for (std::size_t n : ns)
    for (bool desc : {false, true}) {
      check_sorted_copy<std::uint32_t>(n, desc, SortAlgorithm::radix, 0, s, kMsdLow);
      check_sorted_copy<std::int32_t>(n, desc, SortAlgorithm::radix, 0, s, kMsdLow);
      check_sorted_copy<float>(n, desc, SortAlgorithm::radix, 0, s, kMsdLow);  // NaN of both signs, -0.0 and 0.0
      for (int shape : {0, 2, 3}) {
        SCOPED_TRACE(testing::Message() << "in place n=" << n << " desc=" << desc << " shape=" << shape);
        check_in_place(keys_for<std::int32_t>(n, shape, n + shape), desc, s, kMsdLow);
      }
    }
}

TEST(GpuSortMsd, InputOffTheSixteenByteGridAndOddSizes) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  for (std::size_t n : {std::size_t{4099}, std::size_t{123457}}) {
    for (std::size_t skip : {1, 2, 3}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " skip=" << skip);
      const auto all = keys_for<std::uint32_t>(n + skip, 0, n * 7 + skip);
      const std::vector<std::uint32_t> in(all.begin() + std::ptrdiff_t(skip), all.end());
      gpu::DeviceBuffer<std::uint32_t> d(n + skip), out(n);
      upload(d, all, s);
      TANDEM_CUDA(cudaMemsetAsync(out.data(), 0xA5, out.bytes(), s));
      sort_device_copy(d.data() + skip, out.data(), n, msd_low_options(), s);
      expect_keys(in, download(out, s), false);
    }
  }
}

TEST(GpuSortMsd, DefaultThresholdAndTheOptionThatKeepsCub) {
  TANDEM_REQUIRE_GPU();
  if (small()) GTEST_SKIP() << "2^26 keys: too slow under the sanitizer";
  gpu::Stream s;
  const std::size_t n = (std::size_t{1} << 26) + 5;
  const auto in = keys_for<std::uint32_t>(n, 0, 42);
  gpu::DeviceBuffer<std::uint32_t> d(n), out(n);
  upload(d, in, s);
  for (bool wait : {true, false}) {
    SCOPED_TRACE(testing::Message() << "device_host_wait=" << wait);
    SortOptions o;
    o.device_host_wait = wait;
    TANDEM_CUDA(cudaMemsetAsync(out.data(), 0xA5, out.bytes(), s));
    sort_device_copy(d.data(), out.data(), n, o, s);
    expect_keys(in, download(out, s), false);
  }
  EXPECT_TRUE(msd_takes(in, s, 0)) << "the default threshold";
}

TEST(GpuSortMsd, TwoHostThreadsAtOnce) {
  TANDEM_REQUIRE_GPU();
  std::vector<std::string> failures(2);
  auto worker = [&](int t) {
    gpu::Stream s;
    for (int round = 0; round < 4 && failures[t].empty(); ++round) {
      const std::size_t n = 100003 + 1000 * round + t;
      const auto in = keys_for<std::uint32_t>(n, 0, 100 * t + round);
      gpu::DeviceBuffer<std::uint32_t> d(n);
      upload(d, in, s);
      sort_device(d.data(), n, msd_low_options(), s);
      auto want = in;
      std::sort(want.begin(), want.end());
      if (download(d, s) != want) failures[t] = "thread " + std::to_string(t) + " round " + std::to_string(round);
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f;
}

TEST(GpuSortMsd, NeverWaitsOnAStreamBeingCaptured) {
  TANDEM_REQUIRE_GPU();
  gpu::Stream s;
  const std::size_t n = 100000;
  gpu::DeviceBuffer<std::uint32_t> d(n), out(n);
  TANDEM_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  bool took = true;
  {
    auto& ws = detail::sort_workspace();
    std::lock_guard lock(ws.mu);
    took = detail::msd_sort_keys32(d.data(), out.data(), n, ws, s, kMsdLow);
  }
  cudaGraph_t graph = nullptr;
  TANDEM_CUDA(cudaStreamEndCapture(s, &graph));
  EXPECT_FALSE(took);
  if (graph) TANDEM_CUDA(cudaGraphDestroy(graph));
}
