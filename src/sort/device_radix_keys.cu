// CUB sorts of ordered key bits (u32, u64), the key mapping kernels, and the sort workspace.
#include "sort/device_radix_impl.cuh"

#include "core/device_context.hpp"
#include "sort/msd.hpp"
#include "tandem/core/key_order.hpp"

namespace tandem::detail {
namespace {

// src and dst may be the same array (in place).
template <class K, bool Inverse>
__global__ void map_kernel(const void* src, void* dst, std::size_t n, bool descending) {
  using U = ordered_bits_t<K>;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (Inverse) {
      U b = static_cast<const U*>(src)[i];
      if (descending) b = ~b;
      static_cast<K*>(dst)[i] = from_ordered<K>(b);
    } else {
      U b = to_ordered(static_cast<const K*>(src)[i]);
      if (descending) b = ~b;
      static_cast<U*>(dst)[i] = b;
    }
  }
}

template <class K, bool Inverse>
void launch_map(const void* src, void* dst, std::size_t n, bool descending, cudaStream_t s) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 132 * 32));
  map_kernel<K, Inverse><<<blocks, 256, 0, s>>>(src, dst, n, descending);
  TANDEM_CUDA_LAUNCH("sort key mapping");
}

// Histograms of every 8-bit digit of ordered bits: per-block counts in shared memory, then one
// atomic add per bucket and block into the global counters (digit k at hist[k * 256]).
template <class U>
__global__ void digit_histogram_kernel(const U* __restrict__ d, std::size_t n, unsigned long long* hist) {
  constexpr int kDigits = static_cast<int>(sizeof(U));
  __shared__ unsigned int local[kDigits * kMsdBuckets];
  for (int b = threadIdx.x; b < kDigits * kMsdBuckets; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const U x = d[i];
#pragma unroll
    for (int k = 0; k < kDigits; ++k) atomicAdd(&local[k * kMsdBuckets + int((x >> (8 * k)) & (kMsdBuckets - 1))], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kDigits * kMsdBuckets; b += blockDim.x)
    if (local[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(local[b]));
}

}  // namespace

template <class U>
void digit_histogram(const U* d, std::size_t n, unsigned long long* hist, cudaStream_t s) {
  if (n == 0) return;
  // A block counts about n / blocks keys (at most ~2^20 for n < 2^31): no shared counter overflows.
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 1023) / 1024, 132 * 16));
  digit_histogram_kernel<U><<<blocks, 256, 0, s>>>(d, n, hist);
  TANDEM_CUDA_LAUNCH("sort digit histograms");
}
template <class U>
__global__ void gather_kernel(GatherList<U> list) {
  const int seg = blockIdx.y;
  const U* __restrict__ src = list.src[seg];
  U* __restrict__ dst = list.dst[seg];
  const std::size_t n = list.n[seg];
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

template <class U>
void gather_segments(const GatherList<U>& list, cudaStream_t s) {
  std::size_t most = 0;
  for (int i = 0; i < list.count; ++i) most = std::max(most, list.n[i]);
  if (most == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((most + 1023) / 1024, 1024));
  gather_kernel<U><<<dim3(blocks, static_cast<unsigned>(list.count)), 256, 0, s>>>(list);
  TANDEM_CUDA_LAUNCH("sort: gather the upload batches' buckets");
}
template void gather_segments<std::uint32_t>(const GatherList<std::uint32_t>&, cudaStream_t);
template void gather_segments<std::uint64_t>(const GatherList<std::uint64_t>&, cudaStream_t);

template void digit_histogram<std::uint32_t>(const std::uint32_t*, std::size_t, unsigned long long*, cudaStream_t);
template void digit_histogram<std::uint64_t>(const std::uint64_t*, std::size_t, unsigned long long*, cudaStream_t);

void SortWorkspace::begin(cudaStream_t s) {
  if (pending) TANDEM_CUDA(cudaStreamWaitEvent(s, done, 0));
}

void SortWorkspace::end(cudaStream_t s) {
  if (!done) TANDEM_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  TANDEM_CUDA(cudaEventRecord(done, s));
  pending = true;
}

SortWorkspace& sort_workspace() { return current_device().part<SortWorkspace>(); }

char* grow(gpu::DeviceBuffer<char>& b, std::size_t bytes) {
  if (b.size() < bytes) {
    // A sort queued earlier on another stream may still use the old buffer, and cudaFree is not
    // promised to wait for it: wait for the workspace's last use first (buffers only grow: rare).
    const SortWorkspace& ws = sort_workspace();
    if (ws.pending) TANDEM_CUDA(cudaEventSynchronize(ws.done));
    b = gpu::DeviceBuffer<char>();  // free first: the old and new buffer need not fit together
    b = gpu::DeviceBuffer<char>(bytes);
  }
  return b.data();
}

template <class K>
void map_to_bits(void* d, std::size_t n, bool descending, cudaStream_t s) {
  launch_map<K, false>(d, d, n, descending, s);
}
template <class K>
void map_to_bits_copy(const void* src, void* dst, std::size_t n, bool descending, cudaStream_t s) {
  launch_map<K, false>(src, dst, n, descending, s);
}
template <class K>
void map_from_bits(void* d, std::size_t n, bool descending, cudaStream_t s) {
  launch_map<K, true>(d, d, n, descending, s);
}

template <class U>
void sort_bits_copy(const U* in, U* out, std::size_t n, SortWorkspace& ws, cudaStream_t s) {
  if (n > static_cast<std::size_t>(INT_MAX)) throw UsageError("device sort: more than 2^31-1 elements in one piece");
  const auto n32 = static_cast<std::uint32_t>(n);
  cub::DoubleBuffer<U> kb(const_cast<U*>(in), out);  // overwrite = false: `in` is only read
  std::size_t temp = 0;
  TANDEM_CUDA(radix_sort_keys(nullptr, temp, kb, n32, 0, int(sizeof(U) * 8), false, s));
  char* t = grow(ws.temp, temp);
  TANDEM_CUDA(radix_sort_keys(t, temp, kb, n32, 0, int(sizeof(U) * 8), false, s));
}

#define TANDEM_MAP(K)                                                                     \
  template void map_to_bits<K>(void*, std::size_t, bool, cudaStream_t);                   \
  template void map_to_bits_copy<K>(const void*, void*, std::size_t, bool, cudaStream_t); \
  template void map_from_bits<K>(void*, std::size_t, bool, cudaStream_t);
TANDEM_MAP(std::uint32_t)
TANDEM_MAP(std::int32_t)
TANDEM_MAP(std::uint64_t)
TANDEM_MAP(std::int64_t)
TANDEM_MAP(float)
TANDEM_MAP(double)

template std::size_t radix_temp_bytes<std::uint32_t, NoValue>(std::size_t, int, int);
template std::size_t radix_temp_bytes<std::uint64_t, NoValue>(std::size_t, int, int);
template bool sort_bits_range<std::uint32_t, NoValue>(std::uint32_t*, std::uint32_t*, NoValue*, NoValue*, std::size_t,
                                                      int, int, void*, std::size_t, cudaStream_t);
template bool sort_bits_range<std::uint64_t, NoValue>(std::uint64_t*, std::uint64_t*, NoValue*, NoValue*, std::size_t,
                                                      int, int, void*, std::size_t, cudaStream_t);
template void sort_bits<std::uint32_t, NoValue>(std::uint32_t*, NoValue*, std::size_t, bool, SortWorkspace&,
                                                cudaStream_t);
template void sort_bits<std::uint64_t, NoValue>(std::uint64_t*, NoValue*, std::size_t, bool, SortWorkspace&,
                                                cudaStream_t);
template void sort_bits_copy<std::uint32_t>(const std::uint32_t*, std::uint32_t*, std::size_t, SortWorkspace&,
                                            cudaStream_t);
template void sort_bits_copy<std::uint64_t>(const std::uint64_t*, std::uint64_t*, std::size_t, SortWorkspace&,
                                            cudaStream_t);

}  // namespace tandem::detail
