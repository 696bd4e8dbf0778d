// CUB radix and merge sorts of ordered key bits, shared by device_radix_keys.cu and
// device_radix_pairs.cu (split so each file instantiates few CUB kernels).
#pragma once
#include <cub/cub.cuh>

#include <climits>

#include "sort/device_sort.hpp"
#include "sort/radix_policy.cuh"

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
    const auto n32 = static_cast<std::uint32_t>(n);
    TANDEM_CUDA(radix_sort_keys(nullptr, temp, kb, n32, 0, int(sizeof(U) * 8), true, s));
    char* t = grow(ws.temp, temp);
    TANDEM_CUDA(radix_sort_keys(t, temp, kb, n32, 0, int(sizeof(U) * 8), true, s));
  }
  if (kb.Current() != k) TANDEM_CUDA(cudaMemcpyAsync(k, kb.Current(), n * sizeof(U), cudaMemcpyDeviceToDevice, s));
}

// Bits [begin_bit, end_bit) of the ordered bits, stable, with CUB's DoubleBuffer over (k, k_alt)
// (and (v, v_alt)); no copy back: returns true when the result is in the alternate buffers.
template <class U, class V>
std::size_t radix_temp_bytes(std::size_t n, int begin_bit, int end_bit) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  if (n < 2) return 0;
  std::size_t temp = 0;
  cub::DoubleBuffer<U> kb(nullptr, nullptr);
  if constexpr (kValues) {
    cub::DoubleBuffer<V> vb(nullptr, nullptr);
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp, kb, vb, static_cast<int>(n), begin_bit, end_bit));
  } else {
    TANDEM_CUDA(radix_sort_keys(nullptr, temp, kb, static_cast<std::uint32_t>(n), begin_bit, end_bit, true, nullptr));
  }
  return temp;
}

template <class U, class V>
bool sort_bits_range(U* k, U* k_alt, V* v, V* v_alt, std::size_t n, int begin_bit, int end_bit, void* temp,
                     std::size_t temp_bytes, cudaStream_t s) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  if (n < 2 || begin_bit >= end_bit) return false;
  if (n > static_cast<std::size_t>(INT_MAX)) throw UsageError("device sort: more than 2^31-1 elements in one piece");
  cub::DoubleBuffer<U> kb(k, k_alt);
  if constexpr (kValues) {
    cub::DoubleBuffer<V> vb(v, v_alt);
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, kb, vb, static_cast<int>(n), begin_bit, end_bit, s));
    if ((vb.Current() == v_alt) != (kb.Current() == k_alt))  // CUB flips both together; never trust it blindly
      throw CudaError("device sort: keys and values ended in different buffers");
  } else {
    TANDEM_CUDA(radix_sort_keys(temp, temp_bytes, kb, static_cast<std::uint32_t>(n), begin_bit, end_bit, true, s));
  }
  return kb.Current() == k_alt;
}

}  // namespace tandem::detail
