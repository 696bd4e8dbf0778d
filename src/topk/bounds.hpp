// The pure part of top-k: aggregates, the order key (score desc, id asc) and NRA's bounds.
// Shared by the CPU code and the CUDA kernels (__host__ __device__ under nvcc); no runtime calls.
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__CUDACC__)
#define TK_HD __host__ __device__ __forceinline__
#else
#define TK_HD inline
#endif

namespace tandem::topk::detail {

enum : int { kSum = 0, kWsum = 1, kMin = 2, kMax = 3 };

// An aggregate in plain data, passable to a kernel by value.
struct AggSpec {
  int kind{kSum};
  std::uint32_t n{0};
  double w[64]{};
};

TK_HD double agg_identity(int kind) {
  if (kind == kMin) return std::numeric_limits<double>::infinity();
  if (kind == kMax) return -std::numeric_limits<double>::infinity();
  return 0.0;
}

// List i's contribution of score s.
TK_HD double agg_value(const AggSpec& a, std::uint32_t i, float s) {
  return a.kind == kWsum ? a.w[i] * double(s) : double(s);
}

TK_HD double agg_combine(int kind, double x, double y) {
  if (kind == kMin) return y < x ? y : x;
  if (kind == kMax) return y > x ? y : x;
  return x + y;
}

TK_HD int lowest_bit(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(v)) - 1;
#else
  return __builtin_ctzll(v);
#endif
}

TK_HD std::uint64_t full_mask(std::uint32_t n) { return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1; }

// Upper bound of an object whose seen lists are `mask` and partial aggregate `acc`: every unseen
// list i contributes at most tval[i] = agg_value(i, last score read in list i).
TK_HD double upper_bound(int kind, double acc, std::uint64_t mask, std::uint64_t full, const double* tval) {
  std::uint64_t unseen = full & ~mask;
  while (unseen) {
    acc = agg_combine(kind, acc, tval[lowest_bit(unseen)]);
    unseen &= unseen - 1;
  }
  return acc;
}

// A 64-bit key that sorts ascending as the score sorts descending; -0.0 and +0.0 are one key.
TK_HD std::uint64_t order_key(double s) {
  s = s + 0.0;  // -0.0 -> +0.0
  std::uint64_t u;
#if defined(__CUDA_ARCH__)
  u = static_cast<std::uint64_t>(__double_as_longlong(s));
#else
  std::memcpy(&u, &s, sizeof u);
#endif
  const std::uint64_t sign = std::uint64_t{1} << 63;
  const std::uint64_t up = (u & sign) ? ~u : (u | sign);  // increasing with s
  return ~up;
}

TK_HD double key_score(std::uint64_t key) {
  const std::uint64_t sign = std::uint64_t{1} << 63;
  const std::uint64_t up = ~key;
  const std::uint64_t u = (up & sign) ? (up & ~sign) : ~up;
  double s;
#if defined(__CUDA_ARCH__)
  s = __longlong_as_double(static_cast<long long>(u));
#else
  std::memcpy(&s, &u, sizeof s);
#endif
  return s;
}

// (score key, id): ascending order = best first.
struct Key96 {
  std::uint64_t hi;
  std::uint32_t id;
  std::uint32_t pad;
};

TK_HD bool key_less(const Key96& a, const Key96& b) { return a.hi < b.hi || (a.hi == b.hi && a.id < b.id); }

TK_HD Key96 make_key(double score, std::uint32_t id) { return Key96{order_key(score), id, 0}; }

// Can an object with upper bound `ub` and this id still rank before `kth`? (No -> it is out.)
TK_HD bool may_beat(double ub, std::uint32_t id, const Key96& kth) {
  const std::uint64_t h = order_key(ub);
  return h < kth.hi || (h == kth.hi && id < kth.id);
}

// Can an object never read yet (any id) with upper bound `t_agg` rank before `kth`?
TK_HD bool unseen_may_beat(double t_agg, const Key96& kth) { return order_key(t_agg) <= kth.hi; }

}  // namespace tandem::topk::detail
