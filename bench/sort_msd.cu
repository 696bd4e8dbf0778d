// The MSD sort of 32-bit device keys (sort_device_copy) against the anchors users pick, on the same
// device data in the same run: CUB's out-of-place radix sort, and what cupy.sort does (a device
// copy, then CUB's in-place DoubleBuffer sort). Every result is compared with CUB's on the device.
// Then the MSD sort's stages at the largest size (GPU events between them) against the device
// copy's bandwidth, the floor of a pass that reads and writes the keys.
//
//   bench_sort_msd [--max-log2 28] [--reps N] [--quick]
#include <cub/cub.cuh>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "event_time.hpp"
#include "harness.hpp"
#include "sort/device_sort.hpp"
#include "sort/msd_keys32_kernels.cuh"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/sort.hpp"

using namespace tandem;

namespace {

__device__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

const char* kShapes[] = {"uniform", "sorted", "low bits equal", "16 distinct (declined)"};

__global__ void generate(std::uint32_t* d, std::size_t n, int shape) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const auto r = static_cast<std::uint32_t>(mix(i * 31 + shape));
    d[i] = shape == 2 ? (r | 0xFFu) : shape == 3 ? r % 16 : r;
  }
}

__global__ void count_differences(const std::uint32_t* a, const std::uint32_t* b, std::size_t n,
                                  unsigned long long* bad) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    if (a[i] != b[i]) atomicAdd(bad, 1ull);
}

bool same(const std::uint32_t* a, const std::uint32_t* b, std::size_t n, cudaStream_t s) {
  gpu::DeviceBuffer<unsigned long long> bad(1);
  TANDEM_CUDA(cudaMemsetAsync(bad.data(), 0, 8, s));
  count_differences<<<1024, 256, 0, s>>>(a, b, n, bad.data());
  TANDEM_CUDA_LAUNCH("bench: compare");
  unsigned long long h = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&h, bad.data(), 8, cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  return h == 0;
}

struct Buffers {
  gpu::DeviceBuffer<std::uint32_t> in, ref, out, alt;
  gpu::DeviceBuffer<char> temp;
  std::size_t temp_bytes{0};
  explicit Buffers(std::size_t n) : in(n), ref(n), out(n), alt(n) {
    TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, in.data(), out.data(), int(n)));
    temp = gpu::DeviceBuffer<char>(temp_bytes);
  }
};

double seconds(const bench::Bench& b, cudaStream_t s, const std::function<void()>& f) {
  return b.measure([&] { return bench::event_time(s, f); }).median;
}

// One size and shape: the three sorts, each checked against CUB's; returns cupy-like / MSD.
double run_case(bench::Bench& b, Buffers& x, std::size_t n, int shape, cudaStream_t s) {
  const std::string c = std::string(kShapes[shape]) + " 2^" + std::to_string(std::countr_zero(n));
  generate<<<1024, 256, 0, s>>>(x.in.data(), n, shape);
  TANDEM_CUDA_LAUNCH("bench: generate");
  if (shape == 1) {  // sorted input
    TANDEM_CUDA(
        cub::DeviceRadixSort::SortKeys(x.temp.data(), x.temp_bytes, x.in.data(), x.ref.data(), int(n), 0, 32, s));
    TANDEM_CUDA(cudaMemcpyAsync(x.in.data(), x.ref.data(), n * 4, cudaMemcpyDeviceToDevice, s));
  }
  auto row = [&](const char* method, double t, bool ok) {
    b.record(c, method, Stats{t, t, t, t, 1}, double(n), "keys", ok);
    if (!ok) b.fail(c + ": " + method + " differs from CUB's sort");
  };
  const double cub = seconds(b, s, [&] {
    TANDEM_CUDA(
        cub::DeviceRadixSort::SortKeys(x.temp.data(), x.temp_bytes, x.in.data(), x.ref.data(), int(n), 0, 32, s));
  });
  row("CUB radix, out of place", cub, true);
  const double cupy_like = seconds(b, s, [&] {
    TANDEM_CUDA(cudaMemcpyAsync(x.out.data(), x.in.data(), n * 4, cudaMemcpyDeviceToDevice, s));
    cub::DoubleBuffer<std::uint32_t> kb(x.out.data(), x.alt.data());
    TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(x.temp.data(), x.temp_bytes, kb, int(n), 0, 32, s));
    if (kb.Current() != x.out.data())
      TANDEM_CUDA(cudaMemcpyAsync(x.out.data(), kb.Current(), n * 4, cudaMemcpyDeviceToDevice, s));
  });
  row("copy + CUB in place (cupy.sort's way)", cupy_like, same(x.out.data(), x.ref.data(), n, s));
  TANDEM_CUDA(cudaMemsetAsync(x.out.data(), 0xA5, n * 4, s));
  const double msd = seconds(b, s, [&] { sort_device_copy(x.in.data(), x.out.data(), n, {}, s); });
  row("tandem::sort_device_copy", msd, same(x.out.data(), x.ref.data(), n, s));
  std::printf("%-28s CUB %.3f ms, copy + CUB %.3f ms, tandem %.3f ms: %.2fx / %.2fx\n", c.c_str(), cub * 1e3,
              cupy_like * 1e3, msd * 1e3, cub / msd, cupy_like / msd);
  return cupy_like / msd;
}

// The stages of the MSD sort (uniform keys), and the device copy's time for the floor.
void stages(bench::Bench& b, Buffers& x, std::size_t n, cudaStream_t s) {
  generate<<<1024, 256, 0, s>>>(x.in.data(), n, 0);
  TANDEM_CUDA_LAUNCH("bench: generate");
  auto& ws = detail::sort_workspace();
  std::lock_guard lock(ws.mu);
  ws.begin(s);
  // The library's own scratch, through a sort that takes the keys.
  if (!detail::msd_sort_keys32(x.in.data(), x.out.data(), n, ws, s)) {
    b.info("MSD stages: the sort declined uniform keys", 0);
    ws.end(s);
    return;
  }
  detail::msd32::Scratch sc;
  gpu::DeviceBuffer<std::uint32_t> hist(65536), starts(65536), top(256), summary(258);
  gpu::PinnedBuffer<std::uint32_t> host(258);
  sc.hist = hist.data();
  sc.starts = starts.data();
  sc.top_cursor = top.data();
  sc.summary = summary.data();
  sc.scan_temp_bytes = detail::msd32::scan_temp_bytes();
  gpu::DeviceBuffer<char> scan(sc.scan_temp_bytes);
  sc.scan_temp = scan.data();
  sc.summary_host = host.data();
  int device = 0;
  TANDEM_CUDA(cudaGetDevice(&device));
  TANDEM_CUDA(cudaDeviceGetAttribute(&sc.histogram_blocks, cudaDevAttrMultiProcessorCount, device));
  const char* names[] = {"prefix counts, their sum, the host's choice", "scatter by the top byte",
                         "scatter by the middle byte", "sub-bucket sorts in shared memory"};
  std::vector<std::vector<double>> t(4);
  std::vector<gpu::Event> ev(5);
  auto check = [](cudaError_t e, const char* what) { gpu::check(e, what, __FILE__, __LINE__); };
  for (int r = 0; r < std::max(3, b.reps()); ++r) {
    ev[0].record(s);
    detail::msd32::sort_keys32(x.in.data(), x.out.data(), x.alt.data(), n, sc, s, check, 0,
                               [&](int k) { ev[k + 1].record(s); });
    ev[4].sync();
    for (int k = 0; k < 4; ++k) t[k].push_back(ev[k + 1].seconds_since(ev[k]));
  }
  ws.end(s);
  const double copy = seconds(
      b, s, [&] { TANDEM_CUDA(cudaMemcpyAsync(x.out.data(), x.in.data(), n * 4, cudaMemcpyDeviceToDevice, s)); });
  const double pass_floor = copy;  // a pass reads and writes the keys once, as the copy does
  std::printf("\nMSD stages, 2^%d uniform keys (median of %zu); a read+write pass's floor (device copy) %.3f ms\n",
              std::countr_zero(n), t[0].size(), pass_floor * 1e3);
  double total = 0;
  for (int k = 0; k < 4; ++k) {
    std::sort(t[k].begin(), t[k].end());
    const double m = t[k][t[k].size() / 2];
    total += m;
    const double floor = k == 0 ? pass_floor / 2 : pass_floor;
    std::printf("  %-46s %7.3f ms  %5.2fx its floor\n", names[k], m * 1e3, m / floor);
    b.info(std::string("MSD stage: ") + names[k], m * 1e3, "ms");
  }
  std::printf("  %-46s %7.3f ms  %5.2fx the floor of 3.5 passes\n", "all", total * 1e3, total / (3.5 * pass_floor));
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("sort_msd", argc, argv);
  if (!gpu::available()) {
    b.info("no GPU: the device MSD sort's figures skipped", 0);
    return b.finish();
  }
  const int max_log2 = int(b.get_int("--max-log2", b.quick() ? 26 : 28));
  if (max_log2 < 26 || max_log2 > 30) {
    std::fprintf(stderr, "bench_sort_msd: --max-log2 must be in 26..30\n");
    return 2;
  }
  gpu::Stream s;
  Buffers x(std::size_t{1} << max_log2);
  double ratio = 0;
  for (int lg = 26; lg <= max_log2; ++lg)
    for (int shape = 0; shape < 4; ++shape) {
      if (shape != 0 && lg != max_log2) continue;
      const double r = run_case(b, x, std::size_t{1} << lg, shape, s);
      if (shape == 0 && lg == max_log2) ratio = r;
    }
  b.goal("2^" + std::to_string(max_log2) + " u32 sorted copy: copy + CUB (cupy.sort's way) / tandem", ratio, 1.5);
  stages(b, x, std::size_t{1} << max_log2, s);
  return b.finish();
}
