// tandem::sort: the fastest correct sort of the caller's data, wherever it lives.
//
// Keys: u32, i32, u64, i64, f32, f64 (floats in the total order of key_order.hpp); optional
// values u32 or u64 carried with their keys. `algorithm = auto_` picks from measured costs:
// device radix sort (CUB) with staged, overlapped copies for host data that fits on the GPU,
// GPU chunk sorts with a CPU multiway merge for data larger than the GPU, a parallel CPU sort
// without a GPU, and the hybrid CPU+GPU bitonic sort (seed 000) when asked for.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>

#include "tandem/report.hpp"
#include "tandem/types.hpp"

namespace tandem {

enum class SortAlgorithm { auto_, bitonic, radix, merge };
SortAlgorithm parse_sort_algorithm(std::string_view name);  // throws UsageError
std::string_view to_string(SortAlgorithm a);

struct SortOptions {
  SortAlgorithm algorithm{SortAlgorithm::auto_};
  Device device{Device::auto_};
  bool descending{false};
  std::uint64_t gpu_memory_limit{0};  // bytes of GPU memory the sort may use; 0: what is free
  int gpu_sm_limit{0};                // bitonic: launch on at most this many SMs (0: all)
  int threads{0};                     // CPU threads; 0: default_threads()
  // Hybrid bitonic (seed 000)
  char policy{'c'};                   // CPU share policy 'a', 'b' or 'c'
  int min_interior_run{-1};           // -1: the cost model decides gather vs concurrent
  double k{-1};                       // CPU/GPU capability ratio; < 0: measured and cached
  bool progress{false};               // progress line on stderr for long sorts
};

// Sorts keys in place. The Report says which path ran, why, and the time of each stage.
template <class K>
Report sort(std::span<K> keys, const SortOptions& opts = {});

// Sorts keys in place and applies the same permutation to values (values.size() == keys.size(),
// else UsageError). Equal keys keep their input order (stable) on every path.
template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts = {});

}  // namespace tandem
