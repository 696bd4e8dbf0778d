// CUB sorts of (ordered key bits, value) pairs: u32/u64 bits with u32/u64 values.
#include "sort/device_radix_impl.cuh"

namespace tandem::detail {
template void sort_bits<std::uint32_t, std::uint32_t>(std::uint32_t*, std::uint32_t*, std::size_t, bool, SortWorkspace&,
                                                      cudaStream_t);
template void sort_bits<std::uint32_t, std::uint64_t>(std::uint32_t*, std::uint64_t*, std::size_t, bool, SortWorkspace&,
                                                      cudaStream_t);
template void sort_bits<std::uint64_t, std::uint32_t>(std::uint64_t*, std::uint32_t*, std::size_t, bool, SortWorkspace&,
                                                      cudaStream_t);
template void sort_bits<std::uint64_t, std::uint64_t>(std::uint64_t*, std::uint64_t*, std::size_t, bool, SortWorkspace&,
                                                      cudaStream_t);
#define TANDEM_RANGE(U, V)                                            \
  template std::size_t radix_temp_bytes<U, V>(std::size_t, int, int); \
  template bool sort_bits_range<U, V>(U*, U*, V*, V*, std::size_t, int, int, void*, std::size_t, cudaStream_t);
TANDEM_RANGE(std::uint32_t, std::uint32_t)
TANDEM_RANGE(std::uint32_t, std::uint64_t)
TANDEM_RANGE(std::uint64_t, std::uint32_t)
TANDEM_RANGE(std::uint64_t, std::uint64_t)
}  // namespace tandem::detail
