// CUB sorts of (ordered key bits, value) pairs: u32/u64 bits with u32/u64 values.
#include "sort/device_radix_impl.cuh"

namespace tandem::detail {
template void sort_bits<std::uint32_t, std::uint32_t>(std::uint32_t*, std::uint32_t*, std::size_t, bool, SortWorkspace&, cudaStream_t);
template void sort_bits<std::uint32_t, std::uint64_t>(std::uint32_t*, std::uint64_t*, std::size_t, bool, SortWorkspace&, cudaStream_t);
template void sort_bits<std::uint64_t, std::uint32_t>(std::uint64_t*, std::uint32_t*, std::size_t, bool, SortWorkspace&, cudaStream_t);
template void sort_bits<std::uint64_t, std::uint64_t>(std::uint64_t*, std::uint64_t*, std::size_t, bool, SortWorkspace&, cudaStream_t);
}  // namespace tandem::detail
