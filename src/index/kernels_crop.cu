// One-element-per-thread 3-D crop (slice copy) of 1-, 2- and 4-byte elements with each index
// method; also the shared helpers (one wave of blocks, kernel arguments).
#include "index/kernels_common.cuh"

namespace tandem::index::kernels {

unsigned full_wave(unsigned block) {
  static int sms = 0;
  if (sms == 0) {
    int dev = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  }
  return unsigned(sms) * (2048 / block);
}

KernelArgs make_args(const Walk& w) {
  const std::uint64_t total = w.dims.count();
  if (total >= (std::uint64_t(1) << 32) - (std::uint64_t(1) << 28))
    throw UsageError("index benchmark kernels work in 32-bit index mode (fewer than 2^32 - 2^28 elements)");
  KernelArgs a{};
  a.d = w.dims;
  a.total = std::uint32_t(total);
  a.base = w.base;
  a.sx = w.sx;
  a.sy = w.sy;
  a.sz = w.sz;
  a.magic = MagicIndexer(w.dims);
  const std::array<std::uint32_t, 3> ext{w.dims.x, w.dims.y, w.dims.z};
  const std::array<std::int64_t, 3> st{w.sx, w.sy, w.sz};
  a.plan = grid_plan<3>(ext, st, std::max(1u, w.grid), w.block);
  a.table = w.table;
  a.layout = w.layout;
  a.wide_words = w.layout.word_bits > 16;
  if (w.layout.word_bits > 32) throw UsageError("packed tables on the GPU use 16- or 32-bit words");
  return a;
}

namespace {
template <class T>
struct CropOp {
  const T* __restrict__ src;
  T* __restrict__ dst;
  __device__ __forceinline__ void operator()(std::uint32_t n, std::int64_t off, std::uint32_t, std::uint32_t,
                                             std::uint32_t) const {
    dst[n] = src[off];
  }
};
}  // namespace

void crop(Method m, int elem, const void* src, void* dst, const Walk& w, cudaStream_t s) {
  if (m == Method::packed && !w.table) throw UsageError("packed crop needs a table");
  switch (elem) {
    case 1:
      launch_walk(m, CropOp<std::uint8_t>{static_cast<const std::uint8_t*>(src), static_cast<std::uint8_t*>(dst)}, w,
                  s);
      break;
    case 2:
      launch_walk(m, CropOp<std::uint16_t>{static_cast<const std::uint16_t*>(src), static_cast<std::uint16_t*>(dst)}, w,
                  s);
      break;
    case 4:
      launch_walk(m, CropOp<std::uint32_t>{static_cast<const std::uint32_t*>(src), static_cast<std::uint32_t*>(dst)}, w,
                  s);
      break;
    default: throw UsageError("crop supports 1-, 2- and 4-byte elements");
  }
}

}  // namespace tandem::index::kernels
