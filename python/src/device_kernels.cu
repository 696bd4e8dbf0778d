// Small kernels around tandem::sort_device for the Python package: numpy's NaN placement and
// argsort's inputs. Everything is queued on the caller's stream; nothing waits for the device.
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "device.hpp"
#include "nan_order.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::python {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::size_t items) {
  const std::size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(blocks, 65535u * 8)));
}

// The length of the run of NaNs with the first key's sign at the front of sorted keys (one thread:
// a binary search costs ~log2(n) loads, nothing beside a sort).
template <class K>
__global__ void leading_nans_kernel(const K* keys, std::size_t n, unsigned long long* run) {
  std::size_t lo = 0;
  if (n > 0 && isnan(keys[0])) {
    const bool sign = signbit(keys[0]);
    std::size_t hi = n;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (isnan(keys[mid]) && signbit(keys[mid]) == sign) lo = mid + 1;
      else hi = mid;
    }
  }
  *run = lo;
}

// Reverses part of a: 0 = [0, run), 1 = [run, n), 2 = [0, n); nothing when run is 0 or n. The three
// in order rotate the run to the back.
template <class T>
__global__ void reverse_kernel(T* a, std::size_t n, const unsigned long long* run, int part) {
  const std::size_t c = *run;
  if (c == 0 || c >= n) return;
  const std::size_t lo = part == 1 ? c : 0;
  const std::size_t len = part == 0 ? c : (part == 1 ? n - c : n);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < len / 2;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const T t = a[lo + i];
    a[lo + i] = a[lo + len - 1 - i];
    a[lo + len - 1 - i] = t;
  }
}

template <class K>
__global__ void argsort_prepare_kernel(const K* in, K* keys, std::uint64_t* positions, std::size_t n, bool canonical) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    keys[i] = canonical ? numpy_equal_key(in[i]) : in[i];
    positions[i] = i;
  }
}

template <class T>
void reverse_parts(T* a, std::size_t n, const unsigned long long* run, cudaStream_t stream) {
  for (int part = 0; part < 3; ++part) {
    reverse_kernel<T><<<grid_for(n / 2), kThreads, 0, stream>>>(a, n, run, part);
    TANDEM_CUDA_LAUNCH("reverse (NaNs to the end)");
  }
}

}  // namespace

template <class K, class V>
void move_leading_nans_last_device(K* keys, V* values, std::size_t n, cudaStream_t stream) {
  if constexpr (std::is_floating_point_v<K>) {
    if (n < 2) return;
    void* run = nullptr;
    TANDEM_CUDA(cudaMallocAsync(&run, sizeof(unsigned long long), stream));
    auto* c = static_cast<unsigned long long*>(run);
    leading_nans_kernel<K><<<1, 1, 0, stream>>>(keys, n, c);
    TANDEM_CUDA_LAUNCH("leading NaNs");
    reverse_parts(keys, n, c, stream);
    if constexpr (!std::is_void_v<V>) reverse_parts(values, n, c, stream);
    TANDEM_CUDA(cudaFreeAsync(run, stream));
  } else {
    (void)keys, (void)values, (void)n, (void)stream;
  }
}

template <class K>
void argsort_prepare_device(const K* in, K* keys, std::uint64_t* positions, std::size_t n, bool canonical,
                            cudaStream_t stream) {
  if (n == 0) return;
  argsort_prepare_kernel<K><<<grid_for(n), kThreads, 0, stream>>>(in, keys, positions, n, canonical);
  TANDEM_CUDA_LAUNCH("argsort prepare");
}

#define TANDEM_PY_DEVICE_KEYS(K)                                                                                \
  template void move_leading_nans_last_device<K, void>(K*, void*, std::size_t, cudaStream_t);                   \
  template void move_leading_nans_last_device<K, std::uint32_t>(K*, std::uint32_t*, std::size_t, cudaStream_t); \
  template void move_leading_nans_last_device<K, std::uint64_t>(K*, std::uint64_t*, std::size_t, cudaStream_t); \
  template void argsort_prepare_device<K>(const K*, K*, std::uint64_t*, std::size_t, bool, cudaStream_t);
TANDEM_PY_DEVICE_KEYS(std::uint32_t)
TANDEM_PY_DEVICE_KEYS(std::int32_t)
TANDEM_PY_DEVICE_KEYS(std::uint64_t)
TANDEM_PY_DEVICE_KEYS(std::int64_t)
TANDEM_PY_DEVICE_KEYS(float)
TANDEM_PY_DEVICE_KEYS(double)

}  // namespace tandem::python
