// tandem's fast paths: carry iteration with several 16-byte chunks per thread and wide loads and
// stores (crop of bytes, broadcast add), device generation of packed tables, test-data helpers.
#include "index/kernels_common.cuh"
#include "tandem/cuda/buffers.hpp"

namespace tandem::index::kernels {

namespace {

constexpr int kCropUnroll = 1;  // 16-byte chunks per thread per iteration (crop): best on an H200
constexpr int kUnroll = 2;      // 16-byte chunks in flight per thread per iteration (broadcast add)

// An unaligned 16-byte window is read as two aligned 16-byte words (the second only where the
// address is not aligned: it repeats the first otherwise, so nothing past the bytes used is read).
// Both loads are issued before any data is used; shift16 then extracts the window.
struct Raw16 {
  uint4 lo, hi;
  std::uint32_t r;  // address mod 16
};
__device__ __forceinline__ Raw16 load_raw16(const std::uint8_t* p) {
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
  const std::uint32_t r = std::uint32_t(a & 15u);
  const uint4* q = reinterpret_cast<const uint4*>(a - r);
  return {__ldg(q), __ldg(q + (r != 0)), r};
}
__device__ __forceinline__ uint4 shift16(const Raw16& v) {
  const std::uint32_t w[8] = {v.lo.x, v.lo.y, v.lo.z, v.lo.w, v.hi.x, v.hi.y, v.hi.z, v.hi.w};
  const std::uint32_t sh = (v.r & 3u) * 8u;
  std::uint32_t t[7];
#pragma unroll
  for (int i = 0; i < 7; ++i) t[i] = __funnelshift_r(w[i], w[i + 1], sh);
  const std::uint32_t k = v.r >> 2;
  auto pick = [&](int i) { return k == 0 ? t[i] : k == 1 ? t[i + 1] : k == 2 ? t[i + 2] : t[i + 3]; };
  return make_uint4(pick(0), pick(1), pick(2), pick(3));
}

// Bytes j < k from a, the others from b.
__device__ __forceinline__ uint4 merge16(uint4 a, uint4 b, std::uint32_t k) {
  auto word = [&](std::uint32_t wa, std::uint32_t wb, std::uint32_t i) {
    // bytes of word i are j = 4i .. 4i+3; take from a where j < k.
    const std::int32_t m = std::int32_t(k) - std::int32_t(4 * i);
    if (m <= 0) return wb;
    if (m >= 4) return wa;
    const std::uint32_t mask = (1u << (8 * m)) - 1u;
    return (wa & mask) | (wb & ~mask);
  };
  return make_uint4(word(a.x, b.x, 0), word(a.y, b.y, 1), word(a.z, b.z, 2), word(a.w, b.w, 3));
}

// Off/Num: 32-bit offsets and counters where the source and the crop fit (fewer registers, more
// threads resident), 64-bit otherwise.
template <class Off, class Num>
struct WideCrop {
  CarryPlan<3, std::uint32_t, Off> chunk;  // step: grid * block chunks of 16 bytes
  CarryPlan<3, std::uint32_t, Off> one;    // step: 1 byte
  Off base;                                // source offset of the crop's first byte
  Off row, plane;                          // source strides of y and z in bytes
  Num total;                               // bytes of the crop
};

// U chunks of 16 output bytes per thread per iteration: phase 1 walks the chunks by carries and
// issues every load, phase 2 shifts, merges and stores. A chunk inside one source row takes one
// window; across a row end, the row's tail and the next row's head (two windows, merged); rows
// shorter than 16 bytes and the last partial chunk go byte by byte.
template <int U, class Off, class Num>
__global__ void __launch_bounds__(256)
    k_crop_wide(const std::uint8_t* __restrict__ src, std::uint8_t* __restrict__ dst, WideCrop<Off, Num> p) {
  using It = CarryIter<3, std::uint32_t, Off>;
  const Num step = Num(gridDim.x) * blockDim.x * 16;
  Num n = Num(global_thread() * 16);
  It it = It::at(p.chunk, n);
  const std::uint32_t R = p.chunk.ext[0], dy = p.chunk.ext[1];
  while (it.valid(p.chunk)) {
    Raw16 a[U], b[U];
    std::uint32_t k[U];  // bytes from the first window: 16 = one row, 1..15 = two rows, 0 = byte path
    It cur[U];
    Num at[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      cur[u] = it;
      at[u] = n;
      k[u] = 0;
      if (it.valid(p.chunk) && n + 16 <= p.total) {
        const std::uint32_t x = it.idx[0];
        const Off s = p.base + it.off;
        if (x + 16 <= R) {
          k[u] = 16;
          a[u] = load_raw16(src + s);
        } else if (16 - (R - x) <= R) {
          const std::uint32_t kk = R - x;
          const Off row_start = s - Off(x);
          const Off next = it.idx[1] + 1 < dy ? row_start + p.row : row_start - Off(dy - 1) * p.row + p.plane;
          k[u] = kk;
          a[u] = load_raw16(src + s);
          b[u] = load_raw16(src + next - kk);
        }
      }
      it.advance(p.chunk);
      n += step;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (k[u]) {
        uint4 v = shift16(a[u]);
        if (k[u] < 16) v = merge16(v, shift16(b[u]), k[u]);
        *reinterpret_cast<uint4*>(dst + at[u]) = v;
      } else if (cur[u].valid(p.chunk)) {
        It e = cur[u];
        for (Num j = at[u]; j < at[u] + 16 && j < p.total; ++j, e.advance(p.one)) dst[j] = src[p.base + e.off];
      }
    }
  }
}

struct WideAdd {
  Plan3 chunk;  // step: grid * block chunks of 4 floats
  Plan3 one;    // step: 1 element (strides of b)
  std::uint64_t total;
};

__global__ void __launch_bounds__(256)
    k_broadcast_add_wide(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, WideAdd p) {
  const std::uint64_t step = std::uint64_t(gridDim.x) * blockDim.x * 4;
  std::uint64_t n = global_thread() * 4;
  Iter3 it = Iter3::at(p.chunk, n);
  while (it.valid(p.chunk)) {
    float4 va[kUnroll], vb[kUnroll];
    std::uint64_t at[kUnroll];
    Iter3 cur[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      at[u] = n;
      cur[u] = it;
      if (it.valid(p.chunk) && n + 4 <= p.total) {
        va[u] = __ldg(reinterpret_cast<const float4*>(a + n));
        Iter3 e = it;  // b's offsets by steps of 1 element: carries, no division
        vb[u].x = __ldg(b + e.off);
        e.advance(p.one);
        vb[u].y = __ldg(b + e.off);
        e.advance(p.one);
        vb[u].z = __ldg(b + e.off);
        e.advance(p.one);
        vb[u].w = __ldg(b + e.off);
      }
      it.advance(p.chunk);
      n += step;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (!cur[u].valid(p.chunk)) continue;
      if (at[u] + 4 <= p.total) {
        *reinterpret_cast<float4*>(out + at[u]) =
            make_float4(va[u].x + vb[u].x, va[u].y + vb[u].y, va[u].z + vb[u].z, va[u].w + vb[u].w);
      } else {
        Iter3 e = cur[u];
        for (std::uint64_t j = at[u]; j < p.total; ++j, e.advance(p.one)) out[j] = a[j] + b[e.off];
      }
    }
  }
}

template <class Word>
__global__ void k_generate_table(Word* table, Plan3 p, PackLayout l) {
  std::uint64_t n = global_thread();
  const std::uint64_t step = std::uint64_t(gridDim.x) * blockDim.x;
  for (Iter3 it = Iter3::at(p, n); it.valid(p); it.advance(p), n += step)
    table[n] = Word(pack(Index3<std::uint32_t>{it.idx[0], it.idx[1], it.idx[2]}, l));
}

__global__ void k_fill_bytes(std::uint8_t* p, std::uint64_t n, std::uint32_t seed) {
  for (std::uint64_t i = global_thread(); i < n; i += std::uint64_t(gridDim.x) * blockDim.x)
    p[i] = std::uint8_t(test_bits(i, seed));
}
__global__ void k_fill_floats(float* p, std::uint64_t n, std::uint32_t seed) {
  for (std::uint64_t i = global_thread(); i < n; i += std::uint64_t(gridDim.x) * blockDim.x) p[i] = test_float(i, seed);
}
__global__ void k_count_diff(const std::uint8_t* a, const std::uint8_t* b, std::uint64_t n, unsigned long long* out) {
  unsigned long long c = 0;
  for (std::uint64_t i = global_thread(); i < n; i += std::uint64_t(gridDim.x) * blockDim.x) c += a[i] != b[i];
  if (c) atomicAdd(out, c);
}

// One full wave: resident blocks per SM (from the kernel's registers) times the SMs, capped by the work.
template <class K>
unsigned wave_grid(K kernel, std::uint64_t work_items) {
  int dev = 0, sms = 0, per_sm = 0;
  TANDEM_CUDA(cudaGetDevice(&dev));
  TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 256, 0));
  const std::uint64_t need = (work_items + 255) / 256;
  return unsigned(std::max<std::uint64_t>(1, std::min<std::uint64_t>(need, std::uint64_t(sms) * std::max(1, per_sm))));
}

Plan3 plan3(Dims3 d, std::int64_t sx, std::int64_t sy, std::int64_t sz, std::uint64_t step) {
  return make_carry_plan<3>(std::array<std::uint32_t, 3>{d.x, d.y, d.z}, std::array<std::int64_t, 3>{sx, sy, sz}, step);
}

}  // namespace

template <int U, class Off, class Num>
void launch_crop_wide(const std::uint8_t* src, std::uint8_t* dst, const Walk& w, std::uint64_t total, cudaStream_t s) {
  const std::uint64_t chunks = (total + 15) / 16;
  const unsigned grid = w.grid ? w.grid : wave_grid(k_crop_wide<U, Off, Num>, (chunks + U - 1) / U);
  const std::array<std::uint32_t, 3> ext{w.dims.x, w.dims.y, w.dims.z};
  const std::array<Off, 3> st{Off(1), Off(w.sy), Off(w.sz)};
  WideCrop<Off, Num> p{make_carry_plan<3, std::uint32_t, Off>(ext, st, std::uint64_t(grid) * 256 * 16),
                       make_carry_plan<3, std::uint32_t, Off>(ext, st, 1),
                       Off(w.base),
                       Off(w.sy),
                       Off(w.sz),
                       Num(total)};
  k_crop_wide<U, Off, Num><<<grid, 256, 0, s>>>(src, dst, p);
  TANDEM_CUDA_LAUNCH("k_crop_wide");
}

template <int U>
void launch_crop_wide(const std::uint8_t* src, std::uint8_t* dst, const Walk& w, std::uint64_t total, cudaStream_t s) {
  // 32-bit arithmetic when every source offset the walk reaches, and the crop's bytes plus one
  // grid step, stay below 2^31.
  const std::int64_t last =
      w.base + std::int64_t(w.dims.x) + std::int64_t(w.dims.y) * w.sy + std::int64_t(w.dims.z) * w.sz;
  const bool small =
      w.base >= 0 && w.sy >= 0 && w.sz >= 0 && last < (std::int64_t(1) << 30) && total < (std::uint64_t(1) << 30);
  if (small) launch_crop_wide<U, std::int32_t, std::uint32_t>(src, dst, w, total, s);
  else launch_crop_wide<U, std::int64_t, std::uint64_t>(src, dst, w, total, s);
}

void crop_wide(const std::uint8_t* src, std::uint8_t* dst, const Walk& w, cudaStream_t s) {
  const std::uint64_t total = w.dims.count();
  if (total == 0) return;
  if (w.sx != 1) throw UsageError("wide crop walks rows of contiguous bytes (x stride 1)");
  if (reinterpret_cast<std::uintptr_t>(dst) % 16) throw UsageError("wide crop needs a 16-byte aligned destination");
  switch (w.unroll ? w.unroll : kCropUnroll) {
    case 1: launch_crop_wide<1>(src, dst, w, total, s); break;
    case 2: launch_crop_wide<2>(src, dst, w, total, s); break;
    case 4: launch_crop_wide<4>(src, dst, w, total, s); break;
    default: throw UsageError("wide crop unroll must be 1, 2 or 4");
  }
}

void broadcast_add_wide(const float* a, const float* b, float* out, const Walk& w, cudaStream_t s) {
  const std::uint64_t total = w.dims.count();
  if (total == 0) return;
  if (reinterpret_cast<std::uintptr_t>(a) % 16 || reinterpret_cast<std::uintptr_t>(out) % 16)
    throw UsageError("wide broadcast add needs 16-byte aligned a and out");
  const unsigned grid = w.grid ? w.grid : wave_grid(k_broadcast_add_wide, (total + 4 * kUnroll - 1) / (4 * kUnroll));
  WideAdd p{plan3(w.dims, w.sx, w.sy, w.sz, std::uint64_t(grid) * 256 * 4), plan3(w.dims, w.sx, w.sy, w.sz, 1), total};
  k_broadcast_add_wide<<<grid, 256, 0, s>>>(a, b, out, p);
  TANDEM_CUDA_LAUNCH("k_broadcast_add_wide");
}

void generate_table(void* table, Dims3 d, PackLayout l, cudaStream_t s) {
  const std::uint64_t total = d.count();
  if (total == 0) return;
  const unsigned grid = gpu::grid_for(total, 256, full_wave(256));
  const Plan3 p = plan3(d, 1, 0, 0, std::uint64_t(grid) * 256);
  if (l.word_bits == 16) k_generate_table<<<grid, 256, 0, s>>>(static_cast<std::uint16_t*>(table), p, l);
  else if (l.word_bits == 32) k_generate_table<<<grid, 256, 0, s>>>(static_cast<std::uint32_t*>(table), p, l);
  else throw UsageError("packed tables on the GPU use 16- or 32-bit words");
  TANDEM_CUDA_LAUNCH("k_generate_table");
}

void fill_bytes(std::uint8_t* p, std::uint64_t n, std::uint32_t seed, cudaStream_t s) {
  if (!n) return;
  k_fill_bytes<<<gpu::grid_for(n, 256, full_wave(256)), 256, 0, s>>>(p, n, seed);
  TANDEM_CUDA_LAUNCH("k_fill_bytes");
}

void fill_floats(float* p, std::uint64_t n, std::uint32_t seed, cudaStream_t s) {
  if (!n) return;
  k_fill_floats<<<gpu::grid_for(n, 256, full_wave(256)), 256, 0, s>>>(p, n, seed);
  TANDEM_CUDA_LAUNCH("k_fill_floats");
}

std::uint64_t count_differences(const void* a, const void* b, std::uint64_t bytes, cudaStream_t s) {
  gpu::DeviceBuffer<unsigned long long> c(1);
  TANDEM_CUDA(cudaMemsetAsync(c.data(), 0, sizeof(unsigned long long), s));
  if (bytes) {
    k_count_diff<<<gpu::grid_for(bytes, 256, full_wave(256)), 256, 0, s>>>(
        static_cast<const std::uint8_t*>(a), static_cast<const std::uint8_t*>(b), bytes, c.data());
    TANDEM_CUDA_LAUNCH("k_count_diff");
  }
  unsigned long long h = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&h, c.data(), sizeof(h), cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  return h;
}

}  // namespace tandem::index::kernels
