// Hardware counters through CUPTI on simple kernels: instructions are counted, a kernel with
// deliberate shared-memory bank conflicts shows more of them than one without, replays restore
// their input, and an exception from the launch leaves the profiler usable. Skipped without a GPU,
// where the driver restricts counters to administrators, and where another tool (compute-sanitizer,
// a debugger) holds them; the reason is printed.
#include <gtest/gtest.h>

#include <iostream>
#include <stdexcept>
#include <vector>

#include "core/counter_profiler.hpp"
#include "tandem/core/device.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

constexpr int kThreads = 256;
constexpr int kRounds = 64;

// Each thread reads and writes shared memory at index tid * stride (mod 32 * 33): stride 1 keeps
// a warp's 32 accesses in 32 banks, stride 32 puts them all in one bank (32-way conflicts).
__global__ void shared_walk(float* out, int stride) {
  __shared__ float s[32 * 33];
  const int tid = threadIdx.x;
  for (int i = tid; i < 32 * 33; i += blockDim.x) s[i] = float(i);
  __syncthreads();
  float acc = 0;
  for (int r = 0; r < kRounds; ++r) {
    const int at = (tid * stride + r) % (32 * 33);
    acc += s[at];
    __syncthreads();
    s[at] = acc;
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + tid] = acc;
}

__global__ void add_one(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

bool refused(const CounterReading& r) {
  return r.unavailable.find("administrators") != std::string::npos ||
         r.unavailable.find("another profiling tool") != std::string::npos;
}

#define TANDEM_REQUIRE_COUNTERS(reading)                         \
  do {                                                           \
    if (refused(reading)) GTEST_SKIP() << (reading).unavailable; \
    ASSERT_TRUE((reading).ok()) << (reading).unavailable;        \
  } while (0)

CounterReading conflicts_of(gpu::DeviceBuffer<float>& out, int stride) {
  return read_counters({metric::shared_bank_conflicts, metric::instructions}, [&] {
    shared_walk<<<64, kThreads>>>(out.data(), stride);
    TANDEM_CUDA_LAUNCH("shared_walk");
  });
}

}  // namespace

TEST(GpuCounterProfiler, CountsInstructionsAndIpc) {
  TANDEM_REQUIRE_GPU();
  gpu::DeviceBuffer<float> out(64 * kThreads);
  const CounterReading r = read_counters({metric::instructions, metric::ipc, metric::sm_cycles}, [&] {
    shared_walk<<<64, kThreads>>>(out.data(), 1);
    TANDEM_CUDA_LAUNCH("shared_walk");
  });
  TANDEM_REQUIRE_COUNTERS(r);
  ASSERT_EQ(r.values.size(), 3u);
  // 64 blocks x 8 warps x (64 rounds x several instructions): well above 64 x 8 x 64.
  EXPECT_GT(r.values[0], 64.0 * 8 * kRounds) << "instructions";
  EXPECT_GT(r.values[1], 0.0) << "IPC";
  EXPECT_LE(r.values[1], 4.0) << "IPC: an SM issues at most 4 warp instructions per cycle";
  EXPECT_GT(r.values[2], 0.0) << "cycles";
  EXPECT_GE(r.passes, 1);
  EXPECT_GT(r.seconds, 0.0);
}

TEST(GpuCounterProfiler, BankConflictsShowInTheCounter) {
  TANDEM_REQUIRE_GPU();
  gpu::DeviceBuffer<float> out(64 * kThreads);
  const CounterReading plain = conflicts_of(out, 1);
  TANDEM_REQUIRE_COUNTERS(plain);
  const CounterReading conflicted = conflicts_of(out, 32);
  ASSERT_TRUE(conflicted.ok()) << conflicted.unavailable;
  std::cout << "bank conflicts: stride 1 " << plain.values[0] << ", stride 32 " << conflicted.values[0] << '\n';
  EXPECT_GT(conflicted.values[0], 10 * plain.values[0] + 64.0 * 8 * kRounds);
}

TEST(GpuCounterProfiler, ReplaysStartFromPreparedInput) {
  TANDEM_REQUIRE_GPU();
  constexpr int n = 1 << 16;
  gpu::DeviceBuffer<int> d(n);
  int calls = 0;
  const CounterReading r = read_counters(
      {metric::instructions, metric::alu_utilisation, metric::shared_bank_conflicts, metric::sm_cycles},
      [&] {
        add_one<<<n / 256, 256>>>(d.data(), n);
        TANDEM_CUDA_LAUNCH("add_one");
      },
      [&] {
        ++calls;
        TANDEM_CUDA(cudaMemset(d.data(), 0, n * sizeof(int)));
      });
  TANDEM_REQUIRE_COUNTERS(r);
  EXPECT_EQ(calls, r.passes);
  std::vector<int> h(n);
  TANDEM_CUDA(cudaMemcpy(h.data(), d.data(), n * sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(h.front(), 1);  // every pass started from zeros: one increment, whatever the replays
  EXPECT_EQ(h.back(), 1);
}

TEST(GpuCounterProfiler, LaunchErrorsPassThroughAndLeaveItUsable) {
  TANDEM_REQUIRE_GPU();
  gpu::DeviceBuffer<int> d(256);
  const auto add = [&] {
    add_one<<<1, 256>>>(d.data(), 256);
    TANDEM_CUDA_LAUNCH("add_one");
  };
  const CounterReading first = read_counters({metric::instructions}, add);
  TANDEM_REQUIRE_COUNTERS(first);
  EXPECT_THROW(read_counters({metric::instructions}, [] { throw std::runtime_error("launch failed"); }),
               std::runtime_error);
  const CounterReading r = read_counters({metric::instructions}, add);
  ASSERT_TRUE(r.ok()) << r.unavailable;
  EXPECT_GT(r.values[0], 0.0);
}

TEST(GpuCounterProfiler, UnknownMetricIsAReasonNotAnError) {
  TANDEM_REQUIRE_GPU();
  const CounterReading r = read_counters({"no__such_metric.sum"}, [] {});
  if (refused(r)) GTEST_SKIP() << r.unavailable;
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.values.empty());
  EXPECT_FALSE(r.unavailable.empty());
}
