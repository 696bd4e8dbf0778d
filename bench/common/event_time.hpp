// Times GPU work with events on a stream: f() enqueues the work, the result is its device time.
#pragma once
#if TANDEM_HAS_CUDA
#include <functional>

#include "tandem/cuda/stream.hpp"

namespace tandem::bench {

inline double event_time(cudaStream_t s, const std::function<void()>& f) {
  gpu::Event e0, e1;
  e0.record(s);
  f();
  e1.record(s);
  e1.sync();
  return e1.seconds_since(e0);
}

}  // namespace tandem::bench
#endif
