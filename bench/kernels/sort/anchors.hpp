// What bench_bitonic measures tandem's GPU bitonic sort against in the same run: CUB radix sort,
// CUB merge sort and a naive bitonic network (one launch per global step), all on u32 keys in
// device memory, asynchronous on `stream`. CUDA builds only.
#pragma once
#if !TANDEM_HAS_CUDA
#error "kernels/sort/anchors.hpp needs a CUDA build"
#endif
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace tandem::bench {

// CUB's device sorts. temp == nullptr: *temp_bytes receives the temporary storage size.
void cub_radix_sort_u32(const std::uint32_t* d_in, std::uint32_t* d_out, std::uint64_t n, void* temp,
                        std::size_t* temp_bytes, cudaStream_t stream);
void cub_merge_sort_u32(std::uint32_t* d_keys, std::uint64_t n, void* temp, std::size_t* temp_bytes,
                        cudaStream_t stream);

// The naive bitonic network on a power-of-two count: one global kernel per step for strides
// >= 1024, a shared-memory kernel (2048-element tiles) for the strides below.
void naive_bitonic_sort_u32(std::uint32_t* d_keys, std::uint64_t padded, cudaStream_t stream);

}  // namespace tandem::bench
