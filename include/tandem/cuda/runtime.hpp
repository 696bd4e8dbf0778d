// The CUDA runtime, checked: calls that throw CudaError (OutOfMemoryError) naming the call and the
// place, whether a GPU is usable, the current device for a scope, raw device and pinned
// allocations, memory queries. Buffers are in buffers.hpp, streams and events in stream.hpp.
// Include only where TANDEM_HAS_CUDA is 1 (CUDA sources, or .cpp files inside #if TANDEM_HAS_CUDA).
#pragma once
#if !TANDEM_HAS_CUDA
#error "tandem/cuda/runtime.hpp needs a CUDA build (TANDEM_HAS_CUDA=1)"
#endif
#include <cuda_runtime_api.h>

#include <cstddef>
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

// Raw device allocation with cudaMalloc; OutOfMemoryError when the card cannot hold it. Freed
// blocks of up to 64 MiB (256 MiB in all) are kept for the next allocation of about their size
// (src/core/block_cache.hpp); release_cached_device_blocks (or tandem::release_cached_memory)
// gives them back.
void* device_alloc(std::size_t bytes);
void device_free(void* p, std::size_t bytes) noexcept;
std::size_t cached_device_bytes();
void release_cached_device_blocks() noexcept;
void* pinned_alloc(std::size_t bytes);
void pinned_free(void* p) noexcept;

// Free and total memory of the current device.
std::pair<std::size_t, std::size_t> memory_info();

// True when `p` points into page-locked (pinned or registered) host memory.
bool is_pinned(const void* p);

}  // namespace tandem::gpu
