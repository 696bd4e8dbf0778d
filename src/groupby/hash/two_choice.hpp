// Two-choice (cuckoo) placement of a small key set in a table of S slots, built on the host and
// read on the GPU: key k sits at slot1(k, S) or at slot2(k, seed, S), so a lookup is two loads and
// no probe loop. The hash path uses it for its shared-memory table when every sampled key is hot
// (low cardinality): with linear probing the lanes of a warp probe different distances and
// diverge; with two fixed slots they stay together.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "groupby/hash/types.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/cuda/hd.hpp"

namespace tandem::hash_groupby::two_choice {

// h * n / 2^32 (Lemire's range reduction: no power-of-two size needed).
TANDEM_HD std::uint32_t reduce(std::uint32_t h, std::uint32_t n) {
  return static_cast<std::uint32_t>((static_cast<std::uint64_t>(h) * n) >> 32);
}
// First choice: multiplicative (Fibonacci) hashing, cheap.
template <class K>
TANDEM_HD std::uint32_t hash1(K k) {
  if constexpr (sizeof(K) == 4) return static_cast<std::uint32_t>(k) * 0x9E3779B1u;
  else return static_cast<std::uint32_t>((static_cast<std::uint64_t>(k) * 0x9E3779B97F4A7C15ull) >> 32);
}
// Second choice: murmur3's finaliser (mix64) of the seeded key, independent of the first.
template <class K>
TANDEM_HD std::uint32_t hash2(K k, std::uint32_t seed) {
  return static_cast<std::uint32_t>(
      mix64(static_cast<std::uint64_t>(k) ^ (static_cast<std::uint64_t>(seed) * 0xC2B2AE3D27D4EB4Full)) >> 32);
}
template <class K>
TANDEM_HD std::uint32_t slot1(K k, std::uint32_t S) {
  return reduce(hash1(k), S);
}
template <class K>
TANDEM_HD std::uint32_t slot2(K k, std::uint32_t seed, std::uint32_t S) {
  return reduce(hash2(k, seed), S);
}

// Places every key (except `empty`, duplicates once) at one of its two slots of a table of S
// entries (`empty` marks a free slot). False when some key found no place within the kick limit.
template <class K>
bool place(std::span<const K> keys, std::uint32_t S, std::uint32_t seed, K empty, std::vector<K>& table) {
  table.assign(S, empty);
  if (S == 0) return keys.empty();
  constexpr int kMaxKicks = 512;
  for (K k : keys) {
    if (k == empty) continue;
    const std::uint32_t a = slot1(k, S), b = slot2(k, seed, S);
    if (table[a] == k || table[b] == k) continue;
    K cur = k;
    std::uint32_t pos = table[a] == empty ? a : b;
    bool placed = false;
    for (int kick = 0; kick < kMaxKicks && !placed; ++kick) {
      if (table[pos] == empty) {
        table[pos] = cur;
        placed = true;
      } else {
        std::swap(cur, table[pos]);  // evict; the evicted key goes to its other slot
        const std::uint32_t p1 = slot1(cur, S);
        pos = pos == p1 ? slot2(cur, seed, S) : p1;
      }
    }
    if (!placed) return false;
  }
  return true;
}

// Tries seeds 1, 2, ... up to `tries`; returns the seed that placed every key (0: none did).
template <class K>
std::uint32_t build(std::span<const K> keys, std::uint32_t S, K empty, std::vector<K>& table,
                    std::uint32_t tries = 32) {
  for (std::uint32_t seed = 1; seed <= tries; ++seed)
    if (place(keys, S, seed, empty, table)) return seed;
  table.clear();
  return 0;
}

}  // namespace tandem::hash_groupby::two_choice
