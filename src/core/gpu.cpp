#include <cstdio>
#include <mutex>
#include <vector>
#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"

#include <fmt/format.h>

#include "core/block_cache.hpp"
#include "tandem/core/device.hpp"

namespace tandem::gpu {

void throw_cuda(cudaError_t err, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so later calls can proceed
  const std::string msg = fmt::format("CUDA error in {} at {}:{}: {} ({})", what, file, line, cudaGetErrorString(err),
                                      cudaGetErrorName(err));
  if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(msg);
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) throw NoDeviceError(msg);
  throw CudaError(msg);
}

bool available() { return gpu_count() > 0; }

void require() {
  if (!available()) throw NoDeviceError("a GPU is required but none is usable: " + system_info().cuda_status);
}

DeviceGuard::DeviceGuard(int device) {
  TANDEM_CUDA(cudaGetDevice(&previous_));
  if (device != previous_) TANDEM_CUDA(cudaSetDevice(device));
}
DeviceGuard::~DeviceGuard() { cudaSetDevice(previous_); }

Stream::Stream() { TANDEM_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (s_) cudaStreamDestroy(s_);
}
Stream& Stream::operator=(Stream&& o) noexcept {
  std::swap(s_, o.s_);
  return *this;
}
void Stream::sync() const { TANDEM_CUDA(cudaStreamSynchronize(s_)); }

Event::Event(bool timing) {
  TANDEM_CUDA(cudaEventCreateWithFlags(&e_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
Event::~Event() {
  if (e_) cudaEventDestroy(e_);
}
Event& Event::operator=(Event&& o) noexcept {
  std::swap(e_, o.e_);
  return *this;
}
void Event::record(cudaStream_t s) { TANDEM_CUDA(cudaEventRecord(e_, s)); }
void Event::sync() const { TANDEM_CUDA(cudaEventSynchronize(e_)); }
double Event::seconds_since(const Event& start) const {
  float ms = 0;
  TANDEM_CUDA(cudaEventElapsedTime(&ms, start.e_, e_));
  return ms * 1e-3;
}

namespace {

// Freed blocks of up to 64 MiB, at most 256 MiB in all (block_cache.hpp says why).
constexpr std::size_t kMaxCachedBlock = std::size_t{64} << 20;
constexpr std::size_t kMaxCached = std::size_t{256} << 20;

std::mutex& cache_mutex() {
  static std::mutex m;
  return m;
}
BlockCache& block_cache() {
  static auto* cache = new BlockCache(kMaxCachedBlock, kMaxCached);  // outlives exit
  return *cache;
}

int current_device() {
  int d = 0;
  return cudaGetDevice(&d) == cudaSuccess ? d : -1;
}

void free_blocks(const std::vector<CachedBlock>& blocks) noexcept {
  for (const auto& b : blocks) cudaFree(b.p);
}

}  // namespace

void* device_alloc(std::size_t bytes) {
  const int device = current_device();
  {
    std::lock_guard lock(cache_mutex());
    if (void* p = block_cache().take(device, bytes)) return p;
  }
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {  // the cache's blocks may be what is missing
    cudaGetLastError();
    std::vector<CachedBlock> held;
    {
      std::lock_guard lock(cache_mutex());
      held = block_cache().drain(device);
    }
    free_blocks(held);
    if (!held.empty()) err = cudaMalloc(&p, bytes);
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (err == cudaErrorMemoryAllocation) {
      auto [free_b, total_b] = memory_info();
      throw OutOfMemoryError(
          fmt::format("GPU out of memory: asked for {} bytes, {} of {} free", bytes, free_b, total_b));
    }
    throw_cuda(err, "cudaMalloc", __FILE__, __LINE__);
  }
  return p;
}

void device_free(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  // Kept only when it lives on the calling thread's device and there is room; the wait for that
  // device's work is cudaFree's own, so a kept block is idle when it is handed out again.
  const int device = current_device();
  bool room = false;
  {
    std::lock_guard lock(cache_mutex());
    room = block_cache().has_room(bytes);
  }
  cudaPointerAttributes a{};
  if (room && device >= 0 && cudaPointerGetAttributes(&a, p) == cudaSuccess && a.device == device &&
      cudaDeviceSynchronize() == cudaSuccess) {
    std::lock_guard lock(cache_mutex());
    if (block_cache().keep({p, bytes, device})) return;
  }
  cudaGetLastError();
  cudaFree(p);
}

std::size_t cached_device_bytes() {
  std::lock_guard lock(cache_mutex());
  return block_cache().bytes();
}

void release_cached_device_blocks() noexcept {
  std::vector<CachedBlock> held;
  {
    std::lock_guard lock(cache_mutex());
    held = block_cache().drain();
  }
  free_blocks(held);
}

void* pinned_alloc(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw OutOfMemoryError(
        fmt::format("cannot allocate {} bytes of pinned host memory: {}", bytes, cudaGetErrorString(err)));
  }
  return p;
}
void pinned_free(void* p) noexcept {
  if (p) cudaFreeHost(p);
}

std::pair<std::size_t, std::size_t> memory_info() {
  std::size_t f = 0, t = 0;
  TANDEM_CUDA(cudaMemGetInfo(&f, &t));
  return {f, t};
}

bool is_pinned(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost;
}

}  // namespace tandem::gpu
#endif
