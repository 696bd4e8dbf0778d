// The CPU bitonic engine: OpenMP threads and SIMD compare-exchange.
//
// Steps whose compare stride fits in a cache-sized block (2*stride <= kBlockBytes) are fused: each
// thread takes whole blocks and runs all those consecutive steps on its block while it sits in L2.
// Larger strides run one step at a time, the comparators split among the threads. A comparator run
// (a[x] against b[x] for x < len, one direction) is AVX2 min/max where the CPU has AVX2 (runtime
// dispatch through target attributes), a branch-free scalar loop otherwise.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <omp.h>

#include "sort/bitonic/cpu_steps.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::bitonic::detail {
namespace {

constexpr std::size_t kBlockBytes = std::size_t{1} << 17;       // 128 KiB: fused small-stride steps
constexpr std::uint64_t kSerialBelow = std::uint64_t{1} << 14;  // fewer elements: one thread

std::atomic<bool> g_force_scalar{false};

bool have_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool v = __builtin_cpu_supports("avx2");
  return v && !g_force_scalar.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

template <class U>
inline void cx1(U& a, U& b, bool asc) {
  const U x = a, y = b;
  const bool swap = asc ? (y < x) : (x < y);
  a = swap ? y : x;
  b = swap ? x : y;
}

template <class U>
void cx_scalar(U* a, U* b, std::size_t len, bool asc) {
  if (asc)
    for (std::size_t x = 0; x < len; ++x) {
      const U p = a[x], q = b[x];
      a[x] = p < q ? p : q;
      b[x] = p < q ? q : p;
    }
  else
    for (std::size_t x = 0; x < len; ++x) {
      const U p = a[x], q = b[x];
      a[x] = p < q ? q : p;
      b[x] = p < q ? p : q;
    }
}

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2"))) void cx_avx2(std::uint32_t* a, std::uint32_t* b, std::size_t len, bool asc) {
  std::size_t x = 0;
  for (; x + 8 <= len; x += 8) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + x));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + x));
    const __m256i mn = _mm256_min_epu32(va, vb), mx = _mm256_max_epu32(va, vb);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + x), asc ? mn : mx);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b + x), asc ? mx : mn);
  }
  cx_scalar(a + x, b + x, len - x, asc);
}

__attribute__((target("avx2"))) void cx_avx2(std::uint64_t* a, std::uint64_t* b, std::size_t len, bool asc) {
  const __m256i sign = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
  std::size_t x = 0;
  for (; x + 4 <= len; x += 4) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + x));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + x));
    // Unsigned a > b through the signed compare of the sign-flipped values.
    const __m256i gt = _mm256_cmpgt_epi64(_mm256_xor_si256(va, sign), _mm256_xor_si256(vb, sign));
    const __m256i mn = _mm256_blendv_epi8(va, vb, gt), mx = _mm256_blendv_epi8(vb, va, gt);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + x), asc ? mn : mx);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b + x), asc ? mx : mn);
  }
  cx_scalar(a + x, b + x, len - x, asc);
}
#endif

// a[x] <-> b[x] for x < len, all in one direction.
template <class U>
inline void cx_run(U* a, U* b, std::size_t len, bool asc) {
#if defined(__x86_64__) || defined(__i386__)
  if constexpr (std::is_same_v<U, std::uint32_t> || std::is_same_v<U, std::uint64_t>) {
    if (len >= 32 / sizeof(U) && have_avx2()) {
      cx_avx2(a, b, len, asc);
      return;
    }
  }
#endif
  cx_scalar(a, b, len, asc);
}

// One step (merge size `size`, stride s) on [b0, b0 + len) with len a multiple of 2s.
template <class U>
void step_range(U* data, std::uint64_t b0, std::uint64_t len, std::uint64_t size, std::uint64_t s) {
  if (s < 4) {  // tiny strides: one loop over the range, no call per pair
    for (std::uint64_t seg = b0; seg < b0 + len; seg += 2 * s) {
      const bool asc = (seg & size) == 0;
      for (std::uint64_t x = 0; x < s; ++x) cx1(data[seg + x], data[seg + s + x], asc);
    }
    return;
  }
  for (std::uint64_t seg = b0; seg < b0 + len; seg += 2 * s) cx_run(data + seg, data + seg + s, s, (seg & size) == 0);
}

std::uint64_t alignment(std::uint64_t lo, std::uint64_t hi) {
  const std::uint64_t x = lo | hi;
  return x == 0 ? (std::uint64_t{1} << 62) : (x & (~x + 1));  // lowest set bit
}

}  // namespace

std::string cpu_simd() { return have_avx2() ? "avx2" : "scalar"; }

bool cpu_force_scalar(bool on) { return g_force_scalar.exchange(on); }

template <class U>
void cpu_steps(U* data, std::uint64_t lo, std::uint64_t hi, int first, int last, int threads) {
  if (hi <= lo || first > last) return;
  const int nt = (hi - lo) < kSerialBelow ? 1 : (threads > 0 ? threads : default_threads());
  const std::uint64_t block_cap =
      std::min<std::uint64_t>(std::max<std::size_t>(2, kBlockBytes / sizeof(U)), alignment(lo, hi));
  int t = first;
  while (t <= last) {
    const NetStep st = net_step(t);
    if (2 * st.stride <= block_cap) {
      // Fuse every following step that fits in a block; each thread runs them on its blocks.
      int end = t;
      while (end + 1 <= last && 2 * net_step(end + 1).stride <= block_cap) ++end;
      std::uint64_t block = block_cap;
      while (block > 2 && (hi - lo) % block) block >>= 1;
      const std::int64_t nblocks = std::int64_t((hi - lo) / block);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
      for (std::int64_t b = 0; b < nblocks; ++b) {
        const std::uint64_t b0 = lo + std::uint64_t(b) * block;
        for (int u = t; u <= end; ++u) {
          const NetStep s = net_step(u);
          step_range(data, b0, block, std::uint64_t{1} << s.subset, s.stride);
        }
      }
      t = end + 1;
    } else {
      // One large-stride step: pairs (i, i + s) split into chunks of at most 4096 pairs.
      const std::uint64_t s = st.stride, size = std::uint64_t{1} << st.subset;
      const std::uint64_t chunk = std::min<std::uint64_t>(s, 4096);
      const std::int64_t nchunks = std::int64_t((hi - lo) / 2 / chunk);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
      for (std::int64_t c = 0; c < nchunks; ++c) {
        const std::uint64_t q0 = std::uint64_t(c) * chunk;
        const std::uint64_t i = lo + (q0 / s) * 2 * s + q0 % s;
        cx_run(data + i, data + i + s, chunk, (i & size) == 0);
      }
      ++t;
    }
  }
}

template void cpu_steps<std::uint32_t>(std::uint32_t*, std::uint64_t, std::uint64_t, int, int, int);
template void cpu_steps<std::uint64_t>(std::uint64_t*, std::uint64_t, std::uint64_t, int, int, int);
template void cpu_steps<u128>(u128*, std::uint64_t, std::uint64_t, int, int, int);

}  // namespace tandem::bitonic::detail
