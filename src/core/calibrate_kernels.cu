// Device-side parts of calibrate(): device copy bandwidth and a kernel reading pageable memory.
#include "core/calibrate_kernels.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::detail {
namespace {

__global__ void sum_words(const uint4* __restrict__ in, std::size_t n, unsigned* out) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const uint4 v = in[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) atomicAdd(out, 1u);  // keeps the loads alive
}

}  // namespace

double measure_device_copy(std::size_t bytes, int reps) {
  gpu::DeviceBuffer<char> a(bytes), b(bytes);
  TANDEM_CUDA(cudaMemset(a.data(), 1, bytes));
  gpu::Event start, stop;
  std::vector<double> s;
  for (int i = 0; i <= reps; ++i) {
    start.record();
    TANDEM_CUDA(cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice));
    stop.record();
    stop.sync();
    if (i) s.push_back(stop.seconds_since(start));  // first run is a warm-up
  }
  const double med = summarize(s).median;
  return med > 0 ? 2.0 * static_cast<double>(bytes) / med : 0;
}

double measure_pageable_access(const void* host, std::size_t bytes, int reps) {
  const auto gpus = gpu_info();
  if (gpus.empty() || !gpus.front().pageable_memory_access) return 0;
  gpu::DeviceBuffer<unsigned> out(1);
  const std::size_t words = bytes / sizeof(uint4);
  const int blocks = gpus.front().sms * 8;
  std::vector<double> s;
  for (int i = 0; i <= reps; ++i) {
    Stopwatch w;
    sum_words<<<blocks, 256>>>(static_cast<const uint4*>(host), words, out.data());
    TANDEM_CUDA_LAUNCH("sum_words");
    TANDEM_CUDA(cudaDeviceSynchronize());
    if (i) s.push_back(w.seconds());
  }
  const double med = summarize(s).median;
  return med > 0 ? static_cast<double>(words * sizeof(uint4)) / med : 0;
}

}  // namespace tandem::detail
