// The structural pass: 64 input bytes at a time turned into bitmasks of delimiter, line feed,
// carriage return and quote bytes (bit i for byte i), with AVX2 when the processor has it
// (chosen once at run time), else SSE2 or plain C++; and the quoted-region mask by prefix XOR
// (a carry-less multiply by all ones where PCLMUL is there).
#pragma once
#include <cstdint>

namespace tandem::scan {

struct Masks {
  std::uint64_t delimiter{0}, lf{0}, cr{0}, quote{0};
};

enum class SimdLevel : std::uint8_t { scalar, sse2, avx2 };

// The best level this processor runs; `TANDEM_SCAN_SIMD=scalar|sse2|avx2` caps it (tests).
SimdLevel detected_simd_level();
const char* to_string(SimdLevel l);

// Masks of 64 bytes at p (all 64 must be readable).
using MaskFn = Masks (*)(const char* p, char delimiter);
MaskFn mask_function(SimdLevel l);
Masks masks_scalar(const char* p, char delimiter);

// Bit i of the result: the XOR of bits 0..i of x (1 inside a quoted region that an odd number of
// quotes before it opened, the opening quote included, the closing one not).
using PrefixXorFn = std::uint64_t (*)(std::uint64_t x);
PrefixXorFn prefix_xor_function(SimdLevel l);
inline std::uint64_t prefix_xor_scalar(std::uint64_t x) {
  for (int s = 1; s < 64; s <<= 1) x ^= x << s;
  return x;
}

}  // namespace tandem::scan
