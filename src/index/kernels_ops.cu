// One-element-per-thread permute, broadcast add and 7-point stencil with each index method.
#include "index/kernels_common.cuh"

namespace tandem::index::kernels {

namespace {
struct PermuteOp {
  const float* __restrict__ src;
  float* __restrict__ out;
  __device__ __forceinline__ void operator()(std::uint32_t n, std::int64_t off, std::uint32_t, std::uint32_t,
                                             std::uint32_t) const {
    out[n] = __ldg(src + off);
  }
};

struct BroadcastAddOp {
  const float* __restrict__ a;
  const float* __restrict__ b;
  float* __restrict__ out;
  __device__ __forceinline__ void operator()(std::uint32_t n, std::int64_t off, std::uint32_t, std::uint32_t,
                                             std::uint32_t) const {
    out[n] = a[n] + __ldg(b + off);
  }
};

// Values are small integers and the weights powers of two: every method, and the CPU reference,
// get the same bits whatever the order of the additions.
struct StencilOp {
  const float* __restrict__ in;
  float* __restrict__ out;
  Dims3 d;
  std::int64_t sy, sz;
  __device__ __forceinline__ void operator()(std::uint32_t n, std::int64_t off, std::uint32_t x, std::uint32_t y,
                                             std::uint32_t z) const {
    const float c = __ldg(in + off);
    if (x == 0 || y == 0 || z == 0 || x + 1 >= d.x || y + 1 >= d.y || z + 1 >= d.z) {
      out[n] = c;
      return;
    }
    const float s = (__ldg(in + off - 1) + __ldg(in + off + 1)) + (__ldg(in + off - sy) + __ldg(in + off + sy)) +
                    (__ldg(in + off - sz) + __ldg(in + off + sz));
    out[n] = 0.5f * c + 0.0625f * s;
  }
};
}  // namespace

void permute(Method m, const float* src, float* out, const Walk& w, cudaStream_t s) {
  launch_walk(m, PermuteOp{src, out}, w, s);
}

void broadcast_add(Method m, const float* a, const float* b, float* out, const Walk& w, cudaStream_t s) {
  launch_walk(m, BroadcastAddOp{a, b, out}, w, s);
}

void stencil7(Method m, const float* in, float* out, const Walk& w, cudaStream_t s) {
  launch_walk(m, StencilOp{in, out, w.dims, w.sy, w.sz}, w, s);
}

}  // namespace tandem::index::kernels
