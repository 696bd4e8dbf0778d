// The anchors bench_bitonic measures against in the same run: CUB radix sort and CUB merge sort
// of u32 keys on the device, and the naive bitonic network. (No fmt here: nvcc's front end
// rejects fmt's headers.)
#include "kernels/sort/anchors.hpp"

#include <cub/cub.cuh>

#include "tandem/cuda/runtime.hpp"
#include "tandem/sort/bitonic_plan.hpp"

namespace tandem::bench {

void cub_radix_sort_u32(const std::uint32_t* d_in, std::uint32_t* d_out, std::uint64_t n, void* temp,
                        std::size_t* temp_bytes, cudaStream_t stream) {
  TANDEM_CUDA(
      cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, d_in, d_out, static_cast<std::int64_t>(n), 0, 32, stream));
}

void cub_merge_sort_u32(std::uint32_t* d_keys, std::uint64_t n, void* temp, std::size_t* temp_bytes,
                        cudaStream_t stream) {
  TANDEM_CUDA(cub::DeviceMergeSort::SortKeys(temp, *temp_bytes, d_keys, static_cast<std::int64_t>(n),
                                             cuda::std::less<std::uint32_t>{}, stream));
}

namespace {

template <class U>
__device__ __forceinline__ void cx(U& a, U& b, bool asc) {
  const U x = a, y = b;
  const bool swap = asc ? (y < x) : (x < y);
  a = swap ? y : x;
  b = swap ? x : y;
}

// One comparator per thread, one launch per step.
template <class U>
__global__ void naive_step_kernel(U* __restrict__ data, std::uint64_t pairs, std::uint64_t size, std::uint64_t st) {
  const std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  if (q >= pairs) return;
  const std::uint64_t i = ((q & ~(st - 1)) << 1) | (q & (st - 1));
  U a = data[i], b = data[i + st];
  cx(a, b, (i & size) == 0);
  data[i] = a;
  data[i + st] = b;
}

// The shared part: 2048-element tiles, one comparator per thread per step, every step
// with stride < 1024 from subset p_first on (whole subsets up to 2^11 when p_first = 1).
template <class U>
__global__ void naive_shared_kernel(U* __restrict__ data, int p_first, int p_last, int j_first) {
  __shared__ U s[2048];
  const std::uint64_t base = std::uint64_t(blockIdx.x) * 2048;
  const int tid = threadIdx.x;
  s[tid] = data[base + tid];
  s[tid + 1024] = data[base + tid + 1024];
  __syncthreads();
  for (int p = p_first; p <= p_last; ++p) {
    const std::uint64_t size = std::uint64_t{1} << p;
    for (int j = (p == p_first ? j_first : 1); j <= p; ++j) {
      const unsigned st = 1u << (p - j);
      const unsigned i = ((tid & ~(st - 1)) << 1) | (tid & (st - 1));
      U a = s[i], b = s[i + st];
      cx(a, b, ((base + i) & size) == 0);
      s[i] = a;
      s[i + st] = b;
      __syncthreads();
    }
  }
  data[base + tid] = s[tid];
  data[base + tid + 1024] = s[tid + 1024];
}

}  // namespace

void naive_bitonic_sort_u32(std::uint32_t* d, std::uint64_t padded, cudaStream_t s) {
  using U = std::uint32_t;
  using bitonic::ceil_log2;
  using bitonic::net_step;
  using bitonic::NetStep;
  using bitonic::step_count;
  const int n = ceil_log2(padded);
  if (padded < 2) return;
  if (padded < 2048) {  // tiny: one comparator kernel per step
    for (int t = 1; t <= step_count(n); ++t) {
      const NetStep st = net_step(t);
      const std::uint64_t pairs = padded / 2;
      naive_step_kernel<U><<<int((pairs + 255) / 256), 256, 0, s>>>(d, pairs, std::uint64_t{1} << st.subset, st.stride);
      TANDEM_CUDA_LAUNCH("naive_step_kernel");
    }
    return;
  }
  const int tiles = int(padded / 2048);
  naive_shared_kernel<U><<<tiles, 1024, 0, s>>>(d, 1, 11, 1);
  TANDEM_CUDA_LAUNCH("naive_shared_kernel");
  for (int p = 12; p <= n; ++p) {
    for (int j = 1; j <= p - 10; ++j) {  // strides 2^(p-1) .. 2^10 (>= 1024): one kernel each
      const std::uint64_t pairs = padded / 2;
      naive_step_kernel<U>
          <<<int((pairs + 255) / 256), 256, 0, s>>>(d, pairs, std::uint64_t{1} << p, std::uint64_t{1} << (p - j));
      TANDEM_CUDA_LAUNCH("naive_step_kernel");
    }
    naive_shared_kernel<U><<<tiles, 1024, 0, s>>>(d, p, p, p - 9);  // strides 512 .. 1
    TANDEM_CUDA_LAUNCH("naive_shared_kernel");
  }
}

}  // namespace tandem::bench
