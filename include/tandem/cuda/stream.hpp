// CUDA streams. Every public header names a stream cudaStream_t; this header declares that type
// for CPU-only builds too (as the runtime declares it: a pointer to the opaque CUstream_st, so the
// two declarations agree wherever both appear; CPU-only callers pass nullptr). In CUDA builds it
// also holds the owning Stream and the Event used to order and time work on streams.
#pragma once
#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include <utility>
#else
struct CUstream_st;
using cudaStream_t = CUstream_st*;
#endif

#if TANDEM_HAS_CUDA
namespace tandem::gpu {

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

}  // namespace tandem::gpu
#endif
