// CUB device-wide algorithms with their temporary storage. CUDA builds only.
#pragma once
#include <algorithm>
#include <cstddef>

#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"

namespace tandem::gpu {

// Runs a CUB device-wide call the way CUB asks: f(temp, bytes) is called once with temp ==
// nullptr to learn the temporary storage it needs, then again with that much device memory.
// An error of either call is a CudaError naming `what`.
template <class F>
void run_cub(const char* what, F&& f) {
  std::size_t bytes = 0;
  check(f(nullptr, bytes), what, __FILE__, __LINE__);
  DeviceBuffer<std::byte> temp(std::max<std::size_t>(bytes, 1));
  check(f(temp.data(), bytes), what, __FILE__, __LINE__);
}

}  // namespace tandem::gpu
