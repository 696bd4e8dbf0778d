// CUB radix sort calls with tandem's launch shape for 32-bit keys without values.
//
// On an H100 (sm_90) a onesweep tile of 512 threads x 22 keys sorted uniform u32 keys 1.13-1.21x
// faster than CUB's own sm_90 shape (384 x 20) at 2^24-2^28 and as fast at 2^20; pairs and 64-bit
// keys measured no faster with any shape tried, so they keep CUB's (docs/BENCHMARKS.md, "GPU sort
// launch shape"). The shape is the largest tile whose shared memory stays under the 48 KiB of
// CUB's static allocation.
#pragma once
#include <cub/cub.cuh>

#include <cstdint>
#include <type_traits>

namespace tandem::detail {

// The tuned hub leans on CUB's dispatch layer, stable across CCCL 3.x; other versions use CUB's
// public calls unchanged.
#if defined(CUB_VERSION) && CUB_VERSION >= 300000 && CUB_VERSION < 400000
#define TANDEM_WIDE_ONESWEEP_TILE 1
struct WideTileKeys32Hub {
  using Key = std::uint32_t;
  using Offset = std::uint32_t;
  using Cub = cub::detail::radix::policy_hub<Key, cub::NullType, Offset>;
  static constexpr int kBits = 8;
  struct Policy900 : cub::ChainedPolicy<900, Policy900, Cub::Policy800> {
    static constexpr bool ONESWEEP = true;
    static constexpr int ONESWEEP_RADIX_BITS = kBits;
    using HistogramPolicy = cub::AgentRadixSortHistogramPolicy<128, 16, 1, Key, kBits>;
    using ExclusiveSumPolicy = cub::AgentRadixSortExclusiveSumPolicy<256, kBits>;
    using OnesweepPolicy =
        cub::AgentRadixSortOnesweepPolicy<512, 22, Key, 1, cub::RADIX_RANK_MATCH_EARLY_COUNTS_ANY,
                                          cub::BLOCK_SCAN_RAKING_MEMOIZE, cub::RADIX_SORT_STORE_DIRECT, kBits>;
    // Never run on sm_90 (onesweep replaces them) but named by the dispatcher.
    using ScanPolicy = Cub::Policy900::ScanPolicy;
    using DownsweepPolicy = Cub::Policy900::DownsweepPolicy;
    using AltDownsweepPolicy = Cub::Policy900::AltDownsweepPolicy;
    using UpsweepPolicy = Cub::Policy900::UpsweepPolicy;
    using AltUpsweepPolicy = Cub::Policy900::AltUpsweepPolicy;
    using SingleTilePolicy = Cub::Policy900::SingleTilePolicy;
    using SegmentedPolicy = Cub::Policy900::SegmentedPolicy;
    using AltSegmentedPolicy = Cub::Policy900::AltSegmentedPolicy;
  };
  using MaxPolicy = Policy900;
};
#endif

// Ascending keys-only radix sort of bits [begin_bit, end_bit) over the double buffer kb (CUB's
// SortKeys contract). overwrite = false leaves kb.Current() untouched and ends in kb.Alternate()
// (CUB then keeps its own alternate buffer in temp).
template <class U>
cudaError_t radix_sort_keys(void* temp, std::size_t& temp_bytes, cub::DoubleBuffer<U>& kb, std::uint32_t n,
                            int begin_bit, int end_bit, bool overwrite, cudaStream_t s) {
#ifdef TANDEM_WIDE_ONESWEEP_TILE
  if constexpr (std::is_same_v<U, std::uint32_t>) {
    cub::DoubleBuffer<cub::NullType> none;
    return cub::DispatchRadixSort<cub::SortOrder::Ascending, U, cub::NullType, std::uint32_t,
                                  cub::detail::identity_decomposer_t, WideTileKeys32Hub>::Dispatch(temp, temp_bytes, kb,
                                                                                                   none, n, begin_bit,
                                                                                                   end_bit, overwrite,
                                                                                                   s);
  }
#endif
  if (overwrite) return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, kb, n, begin_bit, end_bit, s);
  return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, kb.Current(), kb.Alternate(), n, begin_bit, end_bit, s);
}

}  // namespace tandem::detail
