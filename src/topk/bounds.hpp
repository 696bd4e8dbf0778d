// The pure part of top-k: aggregates, the order key (score desc, id asc) and NRA's bounds.
// Shared by the CPU code and the CUDA kernels (__host__ __device__ under nvcc); no runtime calls.
#pragma once
#include <math.h>

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
  int scale{0};  // sums: units of 2^scale (sum_scale)
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

// ---- exact sums ----
// sum and wsum add each contribution (a score, or weight x score rounded to a double) rounded once
// to a multiple of 2^scale, as 128-bit integers: integer addition gives the same bits in every
// order (list order, depth order, threads, GPU atomics), and the score is that sum rounded once
// to a double. min and max keep the double itself (in lo's bits): they are exact anyway.
struct Acc {
  std::uint64_t lo;
  std::int64_t hi;
};

TK_HD Acc fixed_add(Acc a, Acc b) {
  Acc r;
  r.lo = a.lo + b.lo;
  r.hi = static_cast<std::int64_t>(static_cast<std::uint64_t>(a.hi) + static_cast<std::uint64_t>(b.hi) + (r.lo < a.lo));
  return r;
}

TK_HD std::uint64_t double_bits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

TK_HD double bits_double(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

// y (already in units of 2^scale) rounded to a whole number of units, as to_fixed does.
TK_HD Acc to_fixed_units(double y) {
  double r = rint(y);
  if (r != r) r = 0;
  r = fmin(fmax(r, -0x1p126), 0x1p126);
  if (fabs(r) < 0x1p63) {
    const auto v = static_cast<std::int64_t>(r);
    return Acc{static_cast<std::uint64_t>(v), v < 0 ? -1 : 0};
  }
  const double h = floor(r * 0x1p-64);  // exact: a power-of-two scaling and an integer part
  const double l = r - h * 0x1p64;      // exact, in [0, 2^64)
  return Acc{static_cast<std::uint64_t>(l), static_cast<std::int64_t>(h)};
}

// x in units of 2^scale, rounded to nearest (ties to even), as a 128-bit integer. sum_scale keeps
// |x| below 2^(scale + 120); beyond 2^(scale + 126) (lists breaking their contract) it saturates.
TK_HD Acc to_fixed(double x, int scale) { return to_fixed_units(ldexp(x, -scale)); }

// 2^-scale when it is a normal double (0 otherwise): then x * unit_inverse(scale) is ldexp(x,
// -scale) bit for bit (both the correctly rounded x * 2^-scale), without ldexp's special cases.
TK_HD double unit_inverse(int scale) { return scale >= -1022 && scale <= 1022 ? ldexp(1.0, -scale) : 0.0; }

TK_HD int leading_zeros(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(v));
#else
  return __builtin_clzll(v);
#endif
}

// The 128-bit count of units 2^scale rounded once to the nearest double (ties to even).
TK_HD double from_fixed(Acc a, int scale) {
  const bool neg = a.hi < 0;
  std::uint64_t lo = a.lo, hi = static_cast<std::uint64_t>(a.hi);
  if (neg) {
    lo = ~lo + 1;
    hi = ~hi + (lo == 0);
  }
  double m;
  int shift = 0;
  if (hi == 0) {
    m = static_cast<double>(lo);  // one correctly rounded conversion
  } else {
    // The top 64 bits, with every bit below them folded into the lowest (sticky) bit: 64 bits
    // round to 53 exactly as the whole number would.
    shift = 64 - leading_zeros(hi);
    const std::uint64_t top = shift == 64 ? hi : (hi << (64 - shift)) | (lo >> shift);
    const std::uint64_t below = shift == 64 ? lo : lo & ((std::uint64_t{1} << shift) - 1);
    m = static_cast<double>(top | (below != 0));
  }
  const double v = ldexp(m, shift + scale);
  return neg ? -v : v;
}

TK_HD bool is_sum(int kind) { return kind == kSum || kind == kWsum; }

TK_HD Acc acc_identity(int kind) {
  if (is_sum(kind)) return Acc{0, 0};
  return Acc{double_bits(agg_identity(kind)), 0};
}

// List i's contribution of score s.
TK_HD Acc acc_of(const AggSpec& a, std::uint32_t i, float s) {
  if (is_sum(a.kind)) return to_fixed(agg_value(a, i, s), a.scale);
  return Acc{double_bits(double(s)), 0};
}

TK_HD Acc acc_combine(int kind, Acc x, Acc y) {
  if (is_sum(kind)) return fixed_add(x, y);
  return Acc{double_bits(agg_combine(kind, bits_double(x.lo), bits_double(y.lo))), 0};
}

// The aggregate score: the same bits on every path.
TK_HD double acc_score(int kind, int scale, Acc x) { return is_sum(kind) ? from_fixed(x, scale) : bits_double(x.lo); }
TK_HD double acc_score(const AggSpec& a, Acc x) { return acc_score(a.kind, a.scale, x); }

TK_HD int lowest_bit(std::uint64_t v) {
#if defined(__CUDA_ARCH__)
  return __ffsll(static_cast<long long>(v)) - 1;
#else
  return __builtin_ctzll(v);
#endif
}

TK_HD std::uint64_t full_mask(std::uint32_t n) { return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1; }

// Upper bound of an object whose seen lists are `mask` and partial aggregate `acc`: every unseen
// list i contributes at most tval[i] = acc_of(i, last score read in list i) (rounding to the grid
// and to a double are monotone, so the bound holds for the score too).
TK_HD Acc upper_bound(int kind, Acc acc, std::uint64_t mask, std::uint64_t full, const Acc* tval) {
  std::uint64_t unseen = full & ~mask;
  while (unseen) {
    acc = acc_combine(kind, acc, tval[lowest_bit(unseen)]);
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

// ---- the scan's float filter ----
// The scan first aggregates every object in float (an array small enough to stay in the GPU's L2),
// then aggregates exactly only the objects whose float aggregate lies within twice the float's
// error bound (approx_error) of the k-th best float aggregate. min and max are exact in float.
TK_HD float approx_value(const AggSpec& a, std::uint32_t i, float s) {
  return a.kind == kWsum ? static_cast<float>(a.w[i] * double(s)) : s;
}

TK_HD float approx_identity(int kind) { return static_cast<float>(agg_identity(kind)); }

TK_HD float approx_combine(int kind, float x, float y) {
  if (kind == kMin) return y < x ? y : x;
  if (kind == kMax) return y > x ? y : x;
  return x + y;
}

// order_key for floats: ascending as the score descends; -0.0 and +0.0 are one key.
TK_HD std::uint32_t order_key32(float s) {
  s = s + 0.0f;
  std::uint32_t u;
#if defined(__CUDA_ARCH__)
  u = static_cast<std::uint32_t>(__float_as_uint(s));
#else
  std::memcpy(&u, &s, sizeof u);
#endif
  const std::uint32_t sign = std::uint32_t{1} << 31;
  return ~((u & sign) ? ~u : (u | sign));
}

TK_HD float key32_score(std::uint32_t key) {
  const std::uint32_t sign = std::uint32_t{1} << 31;
  const std::uint32_t up = ~key;
  const std::uint32_t u = (up & sign) ? (up & ~sign) : ~up;
  float s;
#if defined(__CUDA_ARCH__)
  s = __uint_as_float(u);
#else
  std::memcpy(&s, &u, sizeof s);
#endif
  return s;
}

// The smallest float aggregate an object may have and still be in the top k, when the k-th best
// float aggregate is at least `kth_low` and approx_error is `error`: kth_low - 2 * error, rounded
// down to a float (-inf when that is no finite float, or kth_low is NaN).
TK_HD float approx_cut(float kth_low, double error) {
  const double cut = double(kth_low) - 2 * error;
  if (!(cut > -double(std::numeric_limits<float>::max()))) return -std::numeric_limits<float>::infinity();
#if defined(__CUDA_ARCH__)
  return __double2float_rd(cut);
#else
  float f = static_cast<float>(cut);
  if (double(f) > cut) f = nextafterf(f, -std::numeric_limits<float>::infinity());
  return f;
#endif
}

// The lowest float score in a radix-select bucket: keys whose top `bits` bits are `prefix`.
TK_HD float bucket_low(std::uint64_t prefix, int bits) {
  const int rest = 32 - bits;
  const std::uint64_t key = (prefix << rest) | ((std::uint64_t{1} << rest) - 1);
  return key32_score(static_cast<std::uint32_t>(key));
}

// ---- NRA on float partial aggregates ----
// Its state is one 32-bit word per object (an array of m of them stays in the GPU's L2): the low n
// bits hold the lists the object was seen in, the others its float partial aggregate with the n
// lowest mantissa bits cleared (so n <= kPackedMaxLists).
constexpr std::uint32_t kPackedMaxLists = 8;

TK_HD std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

TK_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
#endif
}

TK_HD std::uint32_t packed_low(std::uint32_t n) { return (1u << n) - 1; }
TK_HD std::uint32_t packed_seen(std::uint32_t w, std::uint32_t n) { return w & packed_low(n); }
TK_HD float packed_part(std::uint32_t w, std::uint32_t n) { return bits_float(w & ~packed_low(n)); }

// The word after adding v, list i's float contribution, and marking list i seen.
TK_HD std::uint32_t packed_add(std::uint32_t w, float v, std::uint32_t i, std::uint32_t n) {
  const float sum = packed_part(w, n) + v;
  return (float_bits(sum) & ~packed_low(n)) | packed_seen(w, n) | (1u << i);
}

// A bound on |packed partial - exact| from approx_error's (`err`): clearing n mantissa bits loses
// at most 2^(n-23) of the sum at each of the n additions, 2^(n+1) times the 2^-24 that approx_error
// allows each; twice that for margin.
TK_HD double packed_error(double err, std::uint32_t n) { return err * double((1u << (n + 2)) + 1); }

// The upper bound (in double) of an object whose float partial aggregate over the lists in `seen`
// is `part`: each unseen list i adds at most tw[i], its weight times the last score read in it.
TK_HD double approx_upper_bound(float part, std::uint32_t seen, std::uint32_t full, const double* tw) {
  double ub = part;
  for (std::uint32_t unseen = full & ~seen; unseen; unseen &= unseen - 1) ub += tw[lowest_bit(unseen)];
  return ub;
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

// ---- NRA's stop test as one key (the GPU's NRA in one launch) ----
// Every bound as a key that the k-th must rank strictly before: an object read nowhere (any id)
// with upper bound T as (order_key(T), 0), an object seen in some lists as make_key(its upper
// bound, id) - key_less(kth, bound) is !unseen_may_beat / !may_beat. So NRA may stop once at least
// k complete objects rank before the smallest of these keys, and the answer is the k best complete
// objects.
TK_HD Key96 unseen_bound_key(double t_agg) { return Key96{order_key(t_agg), 0, 0}; }
TK_HD Key96 no_bound_key() { return Key96{~std::uint64_t{0}, ~std::uint32_t{0}, 0}; }  // after every real key
TK_HD Key96 key_min(const Key96& a, const Key96& b) { return key_less(b, a) ? b : a; }

// Its depths: the first round reads `first` levels (shallow_first_depth); then twice as deep
// while fewer than k complete objects beat T (phase 1), a quarter deeper after (phase 2, as the
// exact NRA's stride), never past `budget`, at least `floor` levels a round.
TK_HD std::uint64_t shallow_next_depth(std::uint64_t depth, bool phase2, std::uint64_t floor, std::uint64_t budget) {
  const std::uint64_t step = phase2 ? (depth / 4 > floor ? depth / 4 : floor) : (depth > floor ? depth : floor);
  return depth + step < budget ? depth + step : budget;
}

// Its state: an open-addressing table (linear probing) of the objects seen: a 32-bit key per
// entry (id + 1; 0: a free entry) and, in an array per list, one float per entry, kUnseen until
// the list's score is read (scores are never NaN: validate), so the lists seen need no atomics;
// 4 + 4n bytes an entry. The kernel splits it into one range per block (an object's range: the one
// holding its home) and sets each up afresh. One and a half times as many entries as the first
// round can see (n x first levels), so that round never fills the table beyond two thirds.
constexpr std::uint32_t kShallowMaxLists = 16;
constexpr std::uint32_t kUnseen = 0xffffffffu;  // a NaN's bits
TK_HD std::uint32_t table_key(std::uint32_t id) { return id + 1; }
TK_HD std::uint64_t table_entries(std::uint32_t n, std::uint64_t first) {
  const std::uint64_t want = 3 * std::uint64_t(n) * first / 2;
  return want < 4096 ? 4096 : (want + 31) / 32 * 32;
}
// Past three quarters full, linear probing slows down: the one-launch NRA gives up.
TK_HD bool table_crowded(std::uint64_t claimed, std::uint64_t entries) { return claimed * 4 > entries * 3; }
// An id's first entry: a multiplicative hash scaled onto [0, entries).
TK_HD std::uint64_t table_home(std::uint32_t id, std::uint64_t entries) {
  return (std::uint64_t(id * 0x9E3779B1u) * entries) >> 32;
}

// The complete objects at the stop are ranked through up to kShallowSamples of them: sample t of
// `count`.
constexpr std::uint64_t kShallowSamples = 128;
TK_HD std::uint64_t shallow_samples(std::uint64_t count) { return count < kShallowSamples ? count : kShallowSamples; }
TK_HD std::uint64_t shallow_sample_at(std::uint64_t t, std::uint64_t count) {
  return t * count / shallow_samples(count);
}

}  // namespace tandem::topk::detail
