// The anchors bench_bitonic measures against in the same run: CUB radix sort and CUB merge sort
// of u32 keys on the device. (No fmt here: nvcc's front end rejects fmt's headers.)
#include <cub/cub.cuh>

#include "sort/bitonic_gpu.hpp"
#include "tandem/gpu.hpp"

namespace tandem::bitonic::detail {

void cub_radix_sort_u32(const std::uint32_t* d_in, std::uint32_t* d_out, std::uint64_t n, void* temp,
                        std::size_t* temp_bytes, void* stream) {
  TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, d_in, d_out, static_cast<std::int64_t>(n), 0, 32,
                                             static_cast<cudaStream_t>(stream)));
}

void cub_merge_sort_u32(std::uint32_t* d_keys, std::uint64_t n, void* temp, std::size_t* temp_bytes, void* stream) {
  TANDEM_CUDA(cub::DeviceMergeSort::SortKeys(temp, *temp_bytes, d_keys, static_cast<std::int64_t>(n),
                                             cuda::std::less<std::uint32_t>{}, static_cast<cudaStream_t>(stream)));
}

}  // namespace tandem::bitonic::detail
