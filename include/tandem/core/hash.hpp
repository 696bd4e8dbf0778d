// Hash functions for the host and the device, the same bits on both (tests reason about slots
// and partitions): murmur3's finalisers, a second 32-bit bijection, key and byte-string hashes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tandem/cuda/hd.hpp"

namespace tandem {

// murmur3's 64-bit finaliser (a bijection).
TANDEM_HD std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// murmur3's 32-bit finaliser (a bijection).
TANDEM_HD std::uint32_t fmix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

// A bijection on 32 bits independent of fmix32 (Wellons' lowbias32): generated keys are spread
// over the key range with it, so the tables' fmix32 does not undo the spreading.
TANDEM_HD std::uint32_t scatter32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// 32 bits of a 4- or 8-byte integer key: fmix32 of a 4-byte key, the high half of mix64 of an
// 8-byte one.
template <class K>
TANDEM_HD std::uint32_t hash32(K k) {
  static_assert(sizeof(K) == 4 || sizeof(K) == 8, "hash32 takes 4- or 8-byte keys");
  if constexpr (sizeof(K) == 4) return fmix32(static_cast<std::uint32_t>(k));
  else return static_cast<std::uint32_t>(mix64(static_cast<std::uint64_t>(k)) >> 32);
}

// 64 bits of a byte string: 8-byte words folded through mix64.
TANDEM_HD std::uint64_t hash_bytes(const char* p, std::size_t n) {
  std::uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mix64(h ^ w) + 0x9E3779B97F4A7C15ULL;
  }
  std::uint64_t w = 0;
  for (std::size_t j = 0; i + j < n; ++j) w |= std::uint64_t(static_cast<unsigned char>(p[i + j])) << (8 * j);
  return mix64(h ^ w);
}

}  // namespace tandem
