// What the GPU engines keep between calls and hand back: grow-only device scratch (cudaMalloc of
// large buffers costs more than a whole small job) and a result left in that scratch, with its
// copy to the host. Include from .cu files.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/runtime.hpp"

namespace tandem::gpu {

struct Scratch {
  DeviceBuffer<unsigned char> buf;
  template <class T>
  T* get(std::size_t n) {
    const std::size_t bytes = std::max<std::size_t>(n, 1) * sizeof(T);
    if (buf.size() < bytes) buf = DeviceBuffer<unsigned char>(bytes + bytes / 4);
    return reinterpret_cast<T*>(buf.data());
  }
};

// The result of a run, left in device memory (valid until the engine's next run).
template <class K, class V>
struct DeviceResult {
  const K* keys{nullptr};
  const V* values{nullptr};
  std::size_t n{0};
};

// Copies a device result to (key, value) pairs on the host.
template <class K, class V>
std::vector<std::pair<K, V>> to_host(const DeviceResult<K, V>& d, Report& rep, cudaStream_t stream) {
  Stopwatch w;
  std::vector<K> k(d.n);
  std::vector<V> v(d.n);
  if (d.n) {
    TANDEM_CUDA(cudaMemcpyAsync(k.data(), d.keys, d.n * sizeof(K), cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaMemcpyAsync(v.data(), d.values, d.n * sizeof(V), cudaMemcpyDeviceToHost, stream));
  }
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  std::vector<std::pair<K, V>> out(d.n);
  for (std::size_t i = 0; i < d.n; ++i) out[i] = {k[i], v[i]};
  rep.add("D2H result", "gpu0", w.seconds(), format("{} groups", d.n));
  return out;
}

}  // namespace tandem::gpu
