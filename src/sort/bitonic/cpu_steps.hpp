// Internal: the bitonic network engines the hybrid driver runs steps on. Every engine works on the
// padded array in tandem's key order as unsigned words (u32, u64, or u128 = key bits and the
// original index for stable pairs) and runs network steps first..last (numbers as in
// bitonic_plan.hpp) on the elements [lo, hi). Element i of the network is data[i] (global
// indexing), so comparator directions match the whole network; lo and hi must be multiples of
// 2*stride of every step in the range (the plan's independence condition).
#pragma once
#include <cstdint>
#include <string>

#include "tandem/sort/bitonic_plan.hpp"

namespace tandem::bitonic::detail {

using u128 = unsigned __int128;

// CPU: OpenMP threads (threads <= 0: default_threads()), AVX2 compare-exchange where the CPU has it.
template <class U>
void cpu_steps(U* data, std::uint64_t lo, std::uint64_t hi, int first, int last, int threads);

template <class U>
void cpu_sort(U* data, std::uint64_t padded, int threads) {
  cpu_steps(data, 0, padded, 1, step_count(ceil_log2(padded)), threads);
}

// "avx2" or "scalar": what the compare-exchange of this CPU uses.
std::string cpu_simd();
// Forces the portable path (tests compare both); returns the previous setting.
bool cpu_force_scalar(bool on);

}  // namespace tandem::bitonic::detail
