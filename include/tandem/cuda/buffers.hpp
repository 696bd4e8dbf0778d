// Owning arrays in device memory and in pinned host memory. CUDA builds only.
#pragma once
#if !TANDEM_HAS_CUDA
#error "tandem/cuda/buffers.hpp needs a CUDA build (TANDEM_HAS_CUDA=1)"
#endif
#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include "tandem/cuda/runtime.hpp"

namespace tandem::gpu {

// Where a Buffer's memory comes from.
struct DeviceMemory {
  static void* allocate(std::size_t bytes) { return device_alloc(bytes); }
  static void release(void* p, std::size_t bytes) noexcept { device_free(p, bytes); }
};
struct PinnedMemory {
  static void* allocate(std::size_t bytes) { return pinned_alloc(bytes); }
  static void release(void* p, std::size_t) noexcept { pinned_free(p); }
};

// An owning array of n T in device or pinned host memory; moves, never copies.
template <class T, class Memory>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t n) : n_(n), p_(n ? static_cast<T*>(Memory::allocate(n * sizeof(T))) : nullptr) {}
  ~Buffer() { Memory::release(p_, bytes()); }
  Buffer(Buffer&& o) noexcept : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  T* data() const { return p_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(T); }
  std::span<T> span() const { return {p_, n_}; }
  // Host memory only: element access.
  T& operator[](std::size_t i) const requires std::is_same_v<Memory, PinnedMemory> { return p_[i]; }
  // Device memory only: fills every byte with `byte` (0xFF by default); outputs are poisoned
  // before a kernel writes them.
  void poison(cudaStream_t s = nullptr, int byte = 0xFF) requires std::is_same_v<Memory, DeviceMemory> {
    if (n_) TANDEM_CUDA(cudaMemsetAsync(p_, byte, bytes(), s));
  }

 private:
  std::size_t n_{0};
  T* p_{nullptr};
};

template <class T>
using DeviceBuffer = Buffer<T, DeviceMemory>;
template <class T>
using PinnedBuffer = Buffer<T, PinnedMemory>;

// One value from device memory, once the work queued on `stream` before the copy is done.
template <class T>
T read_value(const T* device, cudaStream_t stream) {
  T v{};
  TANDEM_CUDA(cudaMemcpyAsync(&v, device, sizeof v, cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return v;
}

}  // namespace tandem::gpu
