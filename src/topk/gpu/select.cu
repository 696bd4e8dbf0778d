// Which bucket of score keys holds the k-th best: the device radix select, no host round trip between passes.
#include <cub/cub.cuh>

#include <algorithm>

#include "tandem/core/error.hpp"
#include "tandem/cuda/launch.hpp"
#include "topk/gpu/lists.cuh"

namespace tandem::topk::detail {
namespace {

// Radix select keys: ascending as the score descends (64-bit for double scores, 32 for floats).
__device__ __forceinline__ std::uint64_t select_key(double s) { return order_key(s); }
__device__ __forceinline__ std::uint32_t select_key(float s) { return order_key32(s); }

// Radix select: histogram of the next `width` key bits among objects in the select's bucket.
template <class T>
__global__ void k_select_hist(const T* acc, std::uint64_t m, const SelectState* st, int width,
                              unsigned long long* hist) {
  constexpr int kKeyBits = 8 * sizeof(T);
  __shared__ unsigned int h[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) h[b] = 0;
  __syncthreads();
  const std::uint64_t prefix = st->prefix;
  const int bits = st->bits;
  const unsigned mask = (1u << width) - 1;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  // Every lane of a warp runs the same number of iterations, so the warp can aggregate its
  // increments (scores cluster in few bins: plain shared atomics would serialise).
  const std::uint64_t first = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  const std::uint64_t warp_first = first - (threadIdx.x & 31);
  for (std::uint64_t base = warp_first; base < m; base += stride) {
    const std::uint64_t id = base + (threadIdx.x & 31);
    int bin = -1;
    if (id < m) {
      const std::uint64_t key = select_key(acc[id]);
      if (bits == 0 || (key >> (kKeyBits - bits)) == prefix)
        bin = int(unsigned(key >> (kKeyBits - bits - width)) & mask);
    }
    if (!__any_sync(0xffffffffu, bin >= 0)) continue;  // later passes: most warps hold no object of the bucket
    const unsigned peers = __match_any_sync(0xffffffffu, bin);
    if (bin >= 0 && (threadIdx.x & 31) == unsigned(__ffs(peers) - 1)) atomicAdd(&h[bin], unsigned(__popc(peers)));
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (h[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(h[b]));
}

// One block picks the bin holding the k-th and narrows the select's bucket to it (no host round trip).
constexpr int kPickThreads = kBins / 2;
__global__ void __launch_bounds__(kPickThreads)
    k_select_pick(const unsigned long long* hist, int width, std::uint64_t k, SelectState* st) {
  using Scan = cub::BlockScan<unsigned long long, kPickThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const SelectState s = *st;
  const int b0 = 2 * int(threadIdx.x), bins = 1 << width;
  const unsigned long long h0 = b0 < bins ? hist[b0] : 0, h1 = b0 + 1 < bins ? hist[b0 + 1] : 0;
  unsigned long long before = 0;
  Scan(tmp).ExclusiveSum(h0 + h1, before);
  __syncthreads();  // every thread has read *st
  const unsigned long long need = k - s.less;
  auto take = [&](int bin, unsigned long long at, unsigned long long count) {
    st->prefix = (s.prefix << width) | unsigned(bin);
    st->less = s.less + at;
    st->eq = count;
    st->bits = s.bits + width;
  };
  if (before < need && before + h0 >= need) take(b0, before, h0);
  else if (before + h0 < need && before + h0 + h1 >= need) take(b0 + 1, before + h0, h1);
  if (threadIdx.x == kPickThreads - 1 && before + h0 + h1 < need) st->lost = 1;
}

}  // namespace

template <class T>
int radix_select(DeviceLists::Impl& d, const T* vals, std::uint64_t m, std::uint64_t k) {
  constexpr int kKeyBits = 8 * sizeof(T);
  TANDEM_CUDA(cudaMemsetAsync(d.select.data(), 0, sizeof(SelectState), d.stream));
  int passes = 0;
  for (int bits = 0, width = 0; bits < kKeyBits; bits += width, ++passes) {
    width = std::min(kDigitBits, kKeyBits - bits);
    TANDEM_CUDA(cudaMemsetAsync(d.hist.data(), 0, kBins * sizeof(unsigned long long), d.stream));
    k_select_hist<T>
        <<<gpu::grid_for(m, kBlock, 132 * 8), kBlock, 0, d.stream>>>(vals, m, d.select.data(), width, d.hist.data());
    TANDEM_CUDA_LAUNCH("k_select_hist");
    k_select_pick<<<1, kPickThreads, 0, d.stream>>>(d.hist.data(), width, k, d.select.data());
    TANDEM_CUDA_LAUNCH("k_select_pick");
  }
  return passes;
}

// The select's state on the host (one round trip; the stream's work so far is done after it).
SelectState read_select(DeviceLists::Impl& d) {
  TANDEM_CUDA(
      cudaMemcpyAsync(d.host_select.data(), d.select.data(), sizeof(SelectState), cudaMemcpyDeviceToHost, d.stream));
  d.stream.sync();
  const SelectState st = d.host_select[0];
  if (st.lost) throw Error("top-k scan: radix select lost objects (internal error)");
  return st;
}

template int radix_select<double>(DeviceLists::Impl&, const double*, std::uint64_t, std::uint64_t);
template int radix_select<float>(DeviceLists::Impl&, const float*, std::uint64_t, std::uint64_t);

}  // namespace tandem::topk::detail
