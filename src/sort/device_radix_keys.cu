// CUB sorts of ordered key bits (u32, u64), the key mapping kernels, and the sort workspace.
#include "sort/device_radix_impl.cuh"

#include <map>
#include <memory>

#include "tandem/key_order.hpp"

namespace tandem::detail {
namespace {

template <class K, bool Inverse>
__global__ void map_kernel(void* data, std::size_t n, bool descending) {
  using U = ordered_bits_t<K>;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    if constexpr (Inverse) {
      U b = static_cast<U*>(data)[i];
      if (descending) b = ~b;
      static_cast<K*>(data)[i] = from_ordered<K>(b);
    } else {
      U b = to_ordered(static_cast<K*>(data)[i]);
      if (descending) b = ~b;
      static_cast<U*>(data)[i] = b;
    }
  }
}

template <class K, bool Inverse>
void launch_map(void* d, std::size_t n, bool descending, cudaStream_t s) {
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 132 * 32));
  map_kernel<K, Inverse><<<blocks, 256, 0, s>>>(d, n, descending);
  TANDEM_CUDA_LAUNCH("sort key mapping");
}

}  // namespace

void SortWorkspace::begin(cudaStream_t s) {
  if (pending) TANDEM_CUDA(cudaStreamWaitEvent(s, done, 0));
}

void SortWorkspace::end(cudaStream_t s) {
  if (!done) TANDEM_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  TANDEM_CUDA(cudaEventRecord(done, s));
  pending = true;
}

SortWorkspace& sort_workspace() {
  static auto* mu = new std::mutex;
  static auto* all = new std::map<int, std::unique_ptr<SortWorkspace>>;
  int dev = 0;
  TANDEM_CUDA(cudaGetDevice(&dev));
  std::lock_guard lock(*mu);
  auto& w = (*all)[dev];
  if (!w) w = std::make_unique<SortWorkspace>();
  return *w;
}

char* grow(gpu::DeviceBuffer<char>& b, std::size_t bytes) {
  if (b.size() < bytes) {
    b = gpu::DeviceBuffer<char>();  // free first: the old and new buffer need not fit together
    b = gpu::DeviceBuffer<char>(bytes);
  }
  return b.data();
}

template <class K>
void map_to_bits(void* d, std::size_t n, bool descending, cudaStream_t s) {
  launch_map<K, false>(d, n, descending, s);
}
template <class K>
void map_from_bits(void* d, std::size_t n, bool descending, cudaStream_t s) {
  launch_map<K, true>(d, n, descending, s);
}

#define TANDEM_MAP(K)                                                        \
  template void map_to_bits<K>(void*, std::size_t, bool, cudaStream_t);     \
  template void map_from_bits<K>(void*, std::size_t, bool, cudaStream_t);
TANDEM_MAP(std::uint32_t)
TANDEM_MAP(std::int32_t)
TANDEM_MAP(std::uint64_t)
TANDEM_MAP(std::int64_t)
TANDEM_MAP(float)
TANDEM_MAP(double)

template void sort_bits<std::uint32_t, NoValue>(std::uint32_t*, NoValue*, std::size_t, bool, SortWorkspace&, cudaStream_t);
template void sort_bits<std::uint64_t, NoValue>(std::uint64_t*, NoValue*, std::size_t, bool, SortWorkspace&, cudaStream_t);

}  // namespace tandem::detail
