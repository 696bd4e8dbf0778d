// Host arrays copied into new device arrays. CUDA builds only.
#pragma once
#include <cstddef>

#include "tandem/core/transfer.hpp"
#include "tandem/cuda/buffers.hpp"

namespace tandem::gpu {

// n values of T copied from host memory into a new device array (staged through pinned memory by
// several threads; returns when the copy is done).
template <class T>
DeviceBuffer<T> to_device(const void* host, std::size_t n) {
  DeviceBuffer<T> d(n);
  if (n) copy_to_device(d.data(), host, n * sizeof(T));
  return d;
}

}  // namespace tandem::gpu
