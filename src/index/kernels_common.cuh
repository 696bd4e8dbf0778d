// Internal: the one-element-per-thread kernel every benchmark op shares, with the index method
// as a template parameter. An op is called as op(n, off, x, y, z): n the output element, off the
// source offset base + x*sx + y*sy + z*sz (carried by the iterator in Method::carry, computed by
// multiply-add from (x, y, z) otherwise).
#pragma once
#include "tandem/cuda/runtime.hpp"
#include "tandem/index/device.hpp"
#include "tandem/index/kernels.hpp"

namespace tandem::index::kernels {

using Plan3 = CarryPlan<3, std::uint32_t, std::int64_t>;
using Iter3 = CarryIter<3, std::uint32_t, std::int64_t>;

struct KernelArgs {
  Dims3 d;
  std::uint32_t total;
  std::int64_t base, sx, sy, sz;
  MagicIndexer magic;
  Plan3 plan;  // step = grid * block
  const void* table;
  PackLayout layout;
  bool wide_words;  // 32-bit table words
};

template <Method M, class Op>
__global__ void __launch_bounds__(256) k_walk(Op op, KernelArgs a) {
  if constexpr (M == Method::plain3d) {
    const std::uint32_t x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y,
                        z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= a.d.x || y >= a.d.y || z >= a.d.z) return;
    const std::uint32_t n = x + a.d.x * (y + a.d.y * z);
    op(n, a.base + x * a.sx + y * a.sy + z * a.sz, x, y, z);
  } else if constexpr (M == Method::carry) {
    std::uint32_t n = blockIdx.x * blockDim.x + threadIdx.x;
    const std::uint32_t step = gridDim.x * blockDim.x;
    Iter3 it = Iter3::at(a.plan, n);  // one division per thread, none in the loop
    for (; it.valid(a.plan); it.advance(a.plan), n += step) op(n, a.base + it.off, it.idx[0], it.idx[1], it.idx[2]);
  } else {
    const std::uint32_t step = gridDim.x * blockDim.x;
    for (std::uint32_t n = blockIdx.x * blockDim.x + threadIdx.x; n < a.total; n += step) {
      Index3<std::uint32_t> i;
      if constexpr (M == Method::div) i = index_of<std::uint32_t>(n, a.d);
      else if constexpr (M == Method::magic) i = a.magic(n);
      else if (a.wide_words) i = PackedReader<std::uint32_t>{static_cast<const std::uint32_t*>(a.table), a.layout}(n);
      else i = PackedReader<std::uint16_t>{static_cast<const std::uint16_t*>(a.table), a.layout}(n);
      op(n, a.base + i.x * a.sx + i.y * a.sy + i.z * a.sz, i.x, i.y, i.z);
    }
    // n + step cannot wrap: total <= 2^32 - 1 in these kernels and the grid is far smaller.
  }
}

KernelArgs make_args(const Walk& w);

template <class Op>
void launch_walk(Method m, const Op& op, const Walk& w, cudaStream_t s) {
  const KernelArgs a = make_args(w);
  if (a.total == 0) return;
  switch (m) {
    case Method::plain3d: {
      if (w.dims.y > 65535u * 8 || w.dims.z > 65535u)
        throw UsageError("plain 3-D launch: y or z extent beyond the grid limit");
      const dim3 block(32, 8, 1);
      const dim3 grid((w.dims.x + 31) / 32, (w.dims.y + 7) / 8, w.dims.z);
      k_walk<Method::plain3d><<<grid, block, 0, s>>>(op, a);
      break;
    }
    case Method::div: k_walk<Method::div><<<w.grid, w.block, 0, s>>>(op, a); break;
    case Method::magic: k_walk<Method::magic><<<w.grid, w.block, 0, s>>>(op, a); break;
    case Method::carry: k_walk<Method::carry><<<w.grid, w.block, 0, s>>>(op, a); break;
    case Method::packed: k_walk<Method::packed><<<w.grid, w.block, 0, s>>>(op, a); break;
  }
  TANDEM_CUDA_LAUNCH("index walk kernel");
}

}  // namespace tandem::index::kernels
