// Output columns written on the device: one row per occupied group, each row's value and
// whether it is present computed by a small functor, the validity bitmap built 32 rows at a time
// by a warp vote (bit i of 32-bit word w is row 32w + i: the host's byte layout on a
// little-endian machine).
#pragma once
#include <cstdint>
#include <string>

#include "groupby/gpu/device_columns.hpp"
#include "groupby/gpu/kernels.cuh"

namespace tandem::gpu_groupby {

// f(i, value) sets row i's value and returns whether it is present; absent rows hold Out{}.
template <class Out, class F>
__global__ void finish_kernel(F f, std::size_t m, Out* out, std::uint32_t* valid, u64* missing) {
  const unsigned lane = threadIdx.x % 32;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  // The loop runs while the warp's first row is in range, so every lane takes part in the vote.
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i - lane < m; i += stride) {
    Out v{};
    const bool ok = i < m && f(i, v);
    if (i < m) out[i] = ok ? v : Out{};
    const unsigned mask = __ballot_sync(0xffffffffu, ok);
    if (lane == 0) {
      valid[i / 32] = mask;
      const std::size_t rows = m - i < 32 ? m - i : 32;
      const unsigned absent = static_cast<unsigned>(rows) - __popc(mask);
      if (absent) atomicAdd(missing, u64{absent});
    }
  }
}

// A column of m rows named `name` (type: Out's, or str for dictionary codes) from f.
template <class Out, class F>
DeviceColumn finish(std::string name, ColumnType type, std::size_t m, F f, cudaStream_t s) {
  DeviceColumn c;
  c.name = std::move(name);
  c.type = type;
  c.values = gpu::DeviceBuffer<std::byte>(m * sizeof(Out));
  if (m == 0) return c;
  c.validity = gpu::DeviceBuffer<std::uint8_t>((m + 31) / 32 * 4);
  gpu::DeviceBuffer<u64> missing(1);
  fill<u64>(missing.data(), 1, 0, s);
  finish_kernel<Out, F><<<grid_for(m), 256, 0, s>>>(f, m, reinterpret_cast<Out*>(c.values.data()),
                                                    reinterpret_cast<std::uint32_t*>(c.validity.data()),
                                                    missing.data());
  TANDEM_CUDA_LAUNCH("finish_kernel");
  u64 absent = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&absent, missing.data(), sizeof absent, cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  c.missing = absent;
  if (absent == 0) c.validity = {};
  return c;
}

template <class Out, class F>
DeviceColumn finish(std::string name, std::size_t m, F f, cudaStream_t s) {
  return finish<Out>(std::move(name), column_type_v<Out>, m, f, s);
}

}  // namespace tandem::gpu_groupby
