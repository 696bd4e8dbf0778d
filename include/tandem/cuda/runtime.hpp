// CUDA building blocks: checked calls, RAII device/pinned buffers, streams, events, device guard.
// Include only where TANDEM_HAS_CUDA is 1 (CUDA sources, or .cpp files inside #if TANDEM_HAS_CUDA).
#pragma once
#if !TANDEM_HAS_CUDA
#error "tandem/cuda/runtime.hpp needs a CUDA build (TANDEM_HAS_CUDA=1)"
#endif
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "tandem/core/error.hpp"

namespace tandem::gpu {

// Throws CudaError (OutOfMemoryError for allocation failures) naming the call and the place.
[[noreturn]] void throw_cuda(cudaError_t err, const char* what, const char* file, int line);

inline void check(cudaError_t err, const char* what, const char* file, int line) {
  if (err != cudaSuccess) throw_cuda(err, what, file, line);
}

#define TANDEM_CUDA(call) ::tandem::gpu::check((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: catches bad configurations at once (asynchronous faults surface at the
// next synchronising call, which is checked too).
#define TANDEM_CUDA_LAUNCH(name) ::tandem::gpu::check(cudaGetLastError(), "launch of " name, __FILE__, __LINE__)

// True when at least one usable device exists (cached).
bool available();

// Throws NoDeviceError with a clear message when no GPU is usable.
void require();

// Sets the current device for the scope, restoring the previous one after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_{0};
};

class Stream {
 public:
  Stream();  // non-blocking stream on the current device
  ~Stream();
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  operator cudaStream_t() const { return s_; }
  void sync() const;

 private:
  cudaStream_t s_{nullptr};
};

class Event {
 public:
  explicit Event(bool timing = true);
  ~Event();
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  void record(cudaStream_t s = nullptr);
  void sync() const;
  // Seconds from `start` to this event (both recorded and complete).
  double seconds_since(const Event& start) const;

 private:
  cudaEvent_t e_{nullptr};
};

// Raw device allocation with cudaMalloc; OutOfMemoryError when the card cannot hold it.
void* device_alloc(std::size_t bytes);
void device_free(void* p) noexcept;
void* pinned_alloc(std::size_t bytes);
void pinned_free(void* p) noexcept;

// Where a Buffer's memory comes from.
struct DeviceMemory {
  static void* allocate(std::size_t bytes) { return device_alloc(bytes); }
  static void release(void* p) noexcept { device_free(p); }
};
struct PinnedMemory {
  static void* allocate(std::size_t bytes) { return pinned_alloc(bytes); }
  static void release(void* p) noexcept { pinned_free(p); }
};

// An owning array of n T in device or pinned host memory; moves, never copies.
template <class T, class Memory>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t n) : n_(n), p_(n ? static_cast<T*>(Memory::allocate(n * sizeof(T))) : nullptr) {}
  ~Buffer() { Memory::release(p_); }
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
  T& operator[](std::size_t i) const
    requires std::is_same_v<Memory, PinnedMemory>
  {
    return p_[i];
  }
  // Device memory only: fills every byte with `byte` (0xFF by default); outputs are poisoned
  // before a kernel writes them.
  void poison(cudaStream_t s = nullptr, int byte = 0xFF)
    requires std::is_same_v<Memory, DeviceMemory>
  {
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

// Free and total memory of the current device.
std::pair<std::size_t, std::size_t> memory_info();

// True when `p` points into page-locked (pinned or registered) host memory.
bool is_pinned(const void* p);

}  // namespace tandem::gpu
