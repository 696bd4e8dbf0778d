// CUB radix and merge sorts of ordered key bits, shared by device_radix_keys.cu and
// device_radix_pairs.cu (split so each file instantiates few CUB kernels).
#pragma once
#include <cub/cub.cuh>

#include <climits>

#include "sort/device_sort.hpp"

namespace tandem::detail {

template <class U, class V>
void sort_bits(U* k, V* v, std::size_t n, bool merge, SortWorkspace& ws, cudaStream_t s) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  if (n < 2) return;
  if (n > static_cast<std::size_t>(INT_MAX)) throw UsageError("device sort: more than 2^31-1 elements in one piece");
  const int items = static_cast<int>(n);
  std::size_t temp = 0;
  if (merge) {
    cuda::std::less<U> less;
    if constexpr (kValues) {
      TANDEM_CUDA(cub::DeviceMergeSort::StableSortPairs(nullptr, temp, k, v, items, less, s));
      char* t = grow(ws.temp, temp);
      TANDEM_CUDA(cub::DeviceMergeSort::StableSortPairs(t, temp, k, v, items, less, s));
    } else {
      TANDEM_CUDA(cub::DeviceMergeSort::StableSortKeys(nullptr, temp, k, items, less, s));
      char* t = grow(ws.temp, temp);
      TANDEM_CUDA(cub::DeviceMergeSort::StableSortKeys(t, temp, k, items, less, s));
    }
    return;
  }
  cub::DoubleBuffer<U> kb(k, reinterpret_cast<U*>(grow(ws.alt_keys, n * sizeof(U))));
  if constexpr (kValues) {
    cub::DoubleBuffer<V> vb(v, reinterpret_cast<V*>(grow(ws.alt_values, n * sizeof(V))));
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp, kb, vb, items, 0, int(sizeof(U) * 8), s));
    char* t = grow(ws.temp, temp);
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(t, temp, kb, vb, items, 0, int(sizeof(U) * 8), s));
    if (vb.Current() != v) TANDEM_CUDA(cudaMemcpyAsync(v, vb.Current(), n * sizeof(V), cudaMemcpyDeviceToDevice, s));
  } else {
    TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp, kb, items, 0, int(sizeof(U) * 8), s));
    char* t = grow(ws.temp, temp);
    TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(t, temp, kb, items, 0, int(sizeof(U) * 8), s));
  }
  if (kb.Current() != k) TANDEM_CUDA(cudaMemcpyAsync(k, kb.Current(), n * sizeof(U), cudaMemcpyDeviceToDevice, s));
}

}  // namespace tandem::detail
