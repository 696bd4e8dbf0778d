// Row numbers on the device: 0, 1, …, n - 1 as u32, the values sorted beside keys to learn an
// order (string ranks, table sort, group ids, the hash engine's groups).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tandem::gpu {

// Writes out[i] = i for i < n on `stream` (launch checked; nothing for n = 0).
void iota_u32(std::uint32_t* out, std::size_t n, cudaStream_t stream);

}  // namespace tandem::gpu
