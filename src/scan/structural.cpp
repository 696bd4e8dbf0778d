#include "scan/structural.hpp"

#include <cstdlib>
#include <cstring>
#include <string_view>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tandem::scan {

Masks masks_scalar(const char* p, char delimiter) {
  Masks m;
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    const char c = p[i];
    if (c == delimiter) m.delimiter |= bit;
    if (c == '\n') m.lf |= bit;
    if (c == '\r') m.cr |= bit;
    if (c == '"') m.quote |= bit;
  }
  return m;
}

#if defined(__x86_64__)
namespace {

Masks masks_sse2(const char* p, char delimiter) {
  Masks m;
  const __m128i d = _mm_set1_epi8(delimiter), lf = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                q = _mm_set1_epi8('"');
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    auto bits = [&](__m128i c) {
      return static_cast<std::uint64_t>(static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, c))))
             << (16 * k);
    };
    m.delimiter |= bits(d);
    m.lf |= bits(lf);
    m.cr |= bits(cr);
    m.quote |= bits(q);
  }
  return m;
}

__attribute__((target("avx2"))) inline std::uint64_t equal_bits_avx2(__m256i lo, __m256i hi, char c) {
  const __m256i v = _mm256_set1_epi8(c);
  const auto a = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, v)));
  const auto b = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, v)));
  return a | (static_cast<std::uint64_t>(b) << 32);
}

__attribute__((target("avx2"))) Masks masks_avx2(const char* p, char delimiter) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  Masks m;
  m.delimiter = equal_bits_avx2(lo, hi, delimiter);
  m.lf = equal_bits_avx2(lo, hi, '\n');
  m.cr = equal_bits_avx2(lo, hi, '\r');
  m.quote = equal_bits_avx2(lo, hi, '"');
  return m;
}

__attribute__((target("pclmul"))) std::uint64_t prefix_xor_clmul(std::uint64_t x) {
  const __m128i all_ones = _mm_set1_epi8(static_cast<char>(0xff));
  const __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, static_cast<long long>(x)), all_ones, 0);
  return static_cast<std::uint64_t>(_mm_cvtsi128_si64(r));
}

}  // namespace
#endif

SimdLevel detected_simd_level() {
  SimdLevel best = SimdLevel::scalar;
#if defined(__x86_64__)
  best = SimdLevel::sse2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul")) best = SimdLevel::avx2;
#endif
  if (const char* cap = std::getenv("TANDEM_SCAN_SIMD")) {
    const std::string_view c(cap);
    if (c == "scalar") best = SimdLevel::scalar;
    else if (c == "sse2" && best == SimdLevel::avx2) best = SimdLevel::sse2;
  }
  return best;
}

const char* to_string(SimdLevel l) {
  switch (l) {
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::sse2: return "sse2";
    default: return "scalar";
  }
}

MaskFn mask_function(SimdLevel l) {
#if defined(__x86_64__)
  if (l == SimdLevel::avx2) return masks_avx2;
  if (l == SimdLevel::sse2) return masks_sse2;
#endif
  (void)l;
  return masks_scalar;
}

PrefixXorFn prefix_xor_function(SimdLevel l) {
#if defined(__x86_64__)
  if (l == SimdLevel::avx2) return prefix_xor_clmul;
#endif
  (void)l;
  return prefix_xor_scalar;
}

}  // namespace tandem::scan
