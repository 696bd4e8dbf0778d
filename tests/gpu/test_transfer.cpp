// Staged and pinned transfers move every byte, in both directions, for awkward sizes.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "tandem/core/device.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {
std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>((i * 2654435761u + seed) >> 11);
  return v;
}
}  // namespace

TEST(GpuTransfer, StagedRoundTripOddSizes) {
  TANDEM_REQUIRE_GPU();
  TransferOptions o;
  o.chunk_bytes = 1 << 20;  // small chunks: many pipeline iterations
  o.threads = 3;
  for (std::size_t n : {std::size_t{1}, std::size_t{4095}, std::size_t{(1 << 20)}, std::size_t{(5 << 20) + 13}}) {
    auto src = pattern(n, 7);
    std::vector<unsigned char> back(n, 0);
    gpu::DeviceBuffer<unsigned char> d(n);
    d.poison();
    gpu::Stream s;
    copy_to_device(d.data(), src.data(), n, s, o);
    copy_to_host(back.data(), d.data(), n, s, o);
    EXPECT_EQ(back, src) << n;
  }
}

TEST(GpuTransfer, PinnedPathsAndChunkCallback) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = (3 << 20) + 5;
  auto src = pattern(n, 3);
  gpu::PinnedBuffer<unsigned char> p(n), q(n);
  std::memcpy(p.data(), src.data(), n);
  EXPECT_TRUE(gpu::is_pinned(p.data()));
  EXPECT_FALSE(gpu::is_pinned(src.data()));
  gpu::DeviceBuffer<unsigned char> d(n);
  gpu::Stream s;
  TransferOptions o;
  o.chunk_bytes = 1 << 20;
  std::size_t seen = 0, calls = 0;
  copy_to_device_chunked(d.data(), p.data(), n, s, o, [&](std::size_t off, std::size_t len, cudaStream_t) {
    EXPECT_EQ(off, seen);
    seen += len;
    ++calls;
  });
  EXPECT_EQ(seen, n);
  EXPECT_EQ(calls, 4u);
  std::memset(q.data(), 0xFF, n);
  copy_to_host(q.data(), d.data(), n, s, o);
  EXPECT_EQ(std::memcmp(q.data(), src.data(), n), 0);
}

TEST(GpuTransfer, ConcurrentDirections) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = 9 << 20;
  auto a = pattern(n, 1), b = pattern(n, 2);
  std::vector<unsigned char> out(n, 0);
  gpu::DeviceBuffer<unsigned char> da(n), db(n);
  gpu::Stream s1, s2;
  copy_to_device(db.data(), b.data(), n, s2);
  std::thread up([&] { copy_to_device(da.data(), a.data(), n, s1); });
  copy_to_host(out.data(), db.data(), n, s2);
  up.join();
  EXPECT_EQ(out, b);
  copy_to_host(out.data(), da.data(), n, s1);
  EXPECT_EQ(out, a);
}

TEST(GpuMemory, OutOfMemoryIsAnException) {
  TANDEM_REQUIRE_GPU();
  EXPECT_THROW(gpu::DeviceBuffer<char>(std::size_t{1} << 50), OutOfMemoryError);
  gpu::DeviceBuffer<int> ok(16);  // and the device still works afterwards
  ok.poison();
  EXPECT_NO_THROW(gpu::Stream().sync());
}

TEST(GpuInfo, DescribesTheDevice) {
  TANDEM_REQUIRE_GPU();
  const auto g = gpu_info().at(0);
  EXPECT_GT(g.sms, 0);
  EXPECT_GT(g.memory_bytes, 0u);
  EXPECT_GT(g.l2_bytes, 0u);
  EXPECT_FALSE(g.name.empty());
}
