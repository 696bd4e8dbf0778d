#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/sequence.hpp"

namespace tandem::gpu {
namespace {

__global__ void iota_kernel(std::uint32_t* out, std::size_t n) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride)
    out[i] = static_cast<std::uint32_t>(i);
}

}  // namespace

void iota_u32(std::uint32_t* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  constexpr unsigned kThreads = 256;
  iota_kernel<<<grid_for(n, kThreads, 1u << 16), kThreads, 0, stream>>>(out, n);
  TANDEM_CUDA_LAUNCH("row numbers (iota)");
}

}  // namespace tandem::gpu
