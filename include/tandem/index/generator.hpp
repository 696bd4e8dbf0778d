// Thread-index generation without division: pure code, host and device.
//
// A flat thread number n over a domain (dx, dy, dz) has the 3D index
//   x = n mod dx,  y = (n / dx) mod dy,  z = n / (dx*dy)            (index_of: 2 div + 2 mod)
// The iteration gets the index of n + c from the index of n and the index of the step c
// with only add, subtract and compare (advance). Semantics, for every step c >= 1 including
// c >= dx*dy*dz: the domain is extended without bound along z, so z = n / (dx*dy) may reach or
// pass dz; a walker stops when z >= dz (equivalently n >= dx*dy*dz). advance() is exact because
// x, cx < dx and y, cy < dy hold for every decomposed index (one carry per dimension suffices).
//
// CarryIter<N> generalises it to N dimensions with per-dimension strides: it keeps the index
// digits and the element offset of a strided tensor, and advances both by carries.
// FastDivmod is the second anchor: magic-number division exact for all 32-bit numerators.
#pragma once
#include <cstdint>

#include "tandem/cuda/hd.hpp"

namespace tandem::index {

// Block or domain extents; x is the fastest-varying dimension.
struct Dims3 {
  std::uint32_t x{1}, y{1}, z{1};
  TANDEM_HD constexpr std::uint64_t count() const { return std::uint64_t(x) * y * z; }
  friend constexpr bool operator==(const Dims3&, const Dims3&) = default;
};

template <class T = std::uint32_t>
struct Index3 {
  T x{0}, y{0}, z{0};
  friend constexpr bool operator==(const Index3&, const Index3&) = default;
};

// Direct computation by division and modulo (the anchor). z is unbounded (n / (dx*dy)).
template <class T>
TANDEM_HD constexpr Index3<T> index_of(T n, Dims3 d) {
  const T q = n / T(d.x);
  return {T(n - q * T(d.x)), T(q % T(d.y)), T(q / T(d.y))};
}

// Flat number of an index (inverse of index_of).
template <class T>
TANDEM_HD constexpr T flat_of(Index3<T> i, Dims3 d) {
  return i.x + T(d.x) * (i.y + T(d.y) * i.z);
}

// The carry iteration: index of n + c from the index of n and the index of c.
// Requires i.x, c.x < dx and i.y, c.y < dy (true for anything index_of or advance produced).
template <class T>
TANDEM_HD constexpr Index3<T> advance(Index3<T> i, Index3<T> c, Dims3 d) {
  T x = i.x + c.x;
  const T carry = x >= T(d.x);
  x -= carry ? T(d.x) : T(0);
  T y = i.y + c.y + carry;
  const T carry2 = y >= T(d.y);
  y -= carry2 ? T(d.y) : T(0);
  return {x, y, T(i.z + c.z + carry2)};
}

// A step c decomposed once (c >= 1; make_step in index.hpp checks and throws for c = 0).
template <class T>
struct Step3 {
  T c{1};
  Index3<T> idx{};
};

// -------------------------------------------------------------------------------------------
// Magic-number division (FastDivmod / IntDivider style), exact for every 32-bit numerator and
// every divisor 1 <= d < 2^32: Granlund & Montgomery (1994), Fig. 4.1 with l = ceil(log2 d),
// m = floor(2^32 (2^l - d) / d) + 1, q = (t + ((n - t) >> min(l,1))) >> max(l-1,0), t = hi(m n).
// The shifted form never overflows 32 bits, so numerators up to 2^32 - 1 are exact.
struct FastDivmod {
  std::uint32_t d{1}, m{1};
  std::uint32_t s1{0}, s2{0};

  constexpr FastDivmod() = default;
  // d must be >= 1 (checked by make_divider in index.hpp); d = 0 yields a divide-by-one.
  explicit constexpr FastDivmod(std::uint32_t divisor) : d(divisor ? divisor : 1) {
    std::uint32_t l = 0;
    while (l < 32 && (std::uint64_t(1) << l) < d) ++l;  // ceil(log2 d)
    m = std::uint32_t(((std::uint64_t(1) << 32) * ((std::uint64_t(1) << l) - d)) / d + 1);
    s1 = l < 1 ? l : 1;
    s2 = l > 0 ? l - 1 : 0;
  }
  static TANDEM_HD constexpr std::uint32_t umulhi(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return std::uint32_t((std::uint64_t(a) * b) >> 32);
#endif
  }
  TANDEM_HD constexpr std::uint32_t div(std::uint32_t n) const {
    const std::uint32_t t = umulhi(m, n);
    return (t + ((n - t) >> s1)) >> s2;
  }
  TANDEM_HD constexpr void divmod(std::uint32_t n, std::uint32_t& q, std::uint32_t& r) const {
    q = div(n);
    r = n - q * d;
  }
};

// Index of n by magic division (the second anchor).
struct MagicIndexer {
  FastDivmod dx, dy;
  constexpr MagicIndexer() = default;
  explicit constexpr MagicIndexer(Dims3 d) : dx(d.x), dy(d.y) {}
  TANDEM_HD constexpr Index3<std::uint32_t> operator()(std::uint32_t n) const {
    std::uint32_t q = 0, x = 0, z = 0, y = 0;
    dx.divmod(n, q, x);
    dy.divmod(q, z, y);
    return {x, y, z};
  }
};

// -------------------------------------------------------------------------------------------
// N dimensions with per-dimension strides. Dimension 0 is the fastest-varying; the last
// dimension is unbounded like z above. Offsets are in elements of the strided tensor.
template <int N, class T = std::uint32_t, class Off = std::int64_t>
struct CarryPlan {
  static_assert(N >= 1, "at least one dimension");
  T ext[N]{};       // extents
  Off stride[N]{};  // element strides of the tensor walked
  T step[N]{};      // digits of the step c
  Off off_step{0};  // offset change of the step digits: sum step[k] * stride[k]
  Off back[N]{};    // offset change of a carry out of dimension k: stride[k+1] - ext[k]*stride[k]

  TANDEM_HD constexpr std::uint64_t count() const {
    std::uint64_t n = 1;
    for (int k = 0; k < N; ++k) n *= ext[k];
    return n;
  }
  // Digits of a flat number (divisions: used once per walker, not in the loop).
  TANDEM_HD constexpr void digits(std::uint64_t n, T* out) const {
    for (int k = 0; k < N - 1; ++k) {
      out[k] = T(n % ext[k]);
      n /= ext[k];
    }
    out[N - 1] = T(n);
  }
};

// Builds a plan for a step c (c >= 1; make_carry_plan in index.hpp checks and throws).
template <int N, class T = std::uint32_t, class Off = std::int64_t>
TANDEM_HD constexpr CarryPlan<N, T, Off> carry_plan(const T* ext, const Off* stride, std::uint64_t c) {
  CarryPlan<N, T, Off> p;
  for (int k = 0; k < N; ++k) {
    p.ext[k] = ext[k];
    p.stride[k] = stride[k];
  }
  p.digits(c, p.step);
  for (int k = 0; k < N; ++k) p.off_step += Off(p.step[k]) * stride[k];
  for (int k = 0; k + 1 < N; ++k) p.back[k] = stride[k + 1] - Off(ext[k]) * stride[k];
  return p;
}

template <int N, class T = std::uint32_t, class Off = std::int64_t>
struct CarryIter {
  T idx[N]{};
  Off off{0};

  // Walker at flat number n (divisions once).
  TANDEM_HD constexpr static CarryIter at(const CarryPlan<N, T, Off>& p, std::uint64_t n) {
    CarryIter it;
    p.digits(n, it.idx);
    for (int k = 0; k < N; ++k) it.off += Off(it.idx[k]) * p.stride[k];
    return it;
  }
  TANDEM_HD constexpr bool valid(const CarryPlan<N, T, Off>& p) const { return idx[N - 1] < p.ext[N - 1]; }
  // n += c: add, compare, subtract per dimension; the offset follows the carries.
  TANDEM_HD constexpr void advance(const CarryPlan<N, T, Off>& p) {
    off += p.off_step;
    T carry = 0;
    for (int k = 0; k < N - 1; ++k) {  // N is a constant: unrolled
      T v = idx[k] + p.step[k] + carry;
      carry = v >= p.ext[k];
      if (carry) {
        v -= p.ext[k];
        off += p.back[k];
      }
      idx[k] = v;
    }
    idx[N - 1] += p.step[N - 1] + carry;
  }
};

// -------------------------------------------------------------------------------------------
// Packing. Taking mx as the position of the highest set bit of dx gives mx + my + mz <= ms (ms:
// that of the block size), but those widths do not hold x up to dx - 1 (dx = 5: x = 4 needs 3
// bits, the highest set bit of 5 is at position 2). tandem uses the widths that do hold it,
// w = bit_width(d - 1) = ceil(log2 d), and proves in tests that wx + wy + wz <= 12 <= 16 for every
// block of up to 1024 threads, so one 16-bit word holds any CUDA block's index.
TANDEM_HD constexpr std::uint32_t bit_width(std::uint64_t v) {
  std::uint32_t w = 0;
  while (v) {
    ++w;
    v >>= 1;
  }
  return w;
}
// Bits that hold 0 .. extent-1 (0 for an extent of 1).
TANDEM_HD constexpr std::uint32_t bits_for(std::uint64_t extent) { return extent ? bit_width(extent - 1) : 0; }
// Position of the highest set bit of the extent (floor(log2 d)): the mx above.
TANDEM_HD constexpr std::uint32_t highest_bit(std::uint64_t extent) { return extent ? bit_width(extent) - 1 : 0; }

struct PackLayout {
  std::uint32_t wx{0}, wy{0}, wz{0};
  std::uint32_t word_bits{16};  // 16, 32 or 64: the smallest word that holds wx + wy + wz bits
  TANDEM_HD constexpr std::uint32_t bits() const { return wx + wy + wz; }
  friend constexpr bool operator==(const PackLayout&, const PackLayout&) = default;
};

TANDEM_HD constexpr PackLayout pack_layout(Dims3 d) {
  PackLayout l{bits_for(d.x), bits_for(d.y), bits_for(d.z), 16};
  l.word_bits = l.bits() <= 16 ? 16 : l.bits() <= 32 ? 32 : 64;
  return l;
}

template <class T>
TANDEM_HD constexpr std::uint64_t pack(Index3<T> i, PackLayout l) {
  return std::uint64_t(i.x) | (std::uint64_t(i.y) << l.wx) | (std::uint64_t(i.z) << (l.wx + l.wy));
}

template <class T = std::uint32_t>
TANDEM_HD constexpr Index3<T> unpack(std::uint64_t w, PackLayout l) {
  const std::uint64_t mx = (std::uint64_t(1) << l.wx) - 1, my = (std::uint64_t(1) << l.wy) - 1;
  return {T(w & mx), T((w >> l.wx) & my), T(w >> (l.wx + l.wy))};
}

// 32-bit words (16/32-bit layouts): the form kernels use.
TANDEM_HD constexpr std::uint32_t low_mask32(std::uint32_t bits) {
  return bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1u;
}
TANDEM_HD constexpr Index3<std::uint32_t> unpack32(std::uint32_t w, PackLayout l) {
  return {w & low_mask32(l.wx), l.wx >= 32 ? 0u : (w >> l.wx) & low_mask32(l.wy),
          l.wx + l.wy >= 32 ? 0u : w >> (l.wx + l.wy)};
}

}  // namespace tandem::index
