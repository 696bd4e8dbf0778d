// Bucketed tables for the hash group-by's shared memory: slots come in buckets of kWays, so a
// lookup reads a whole bucket with one 16-byte load (u32 keys) and compares its kWays keys.
//
// Hot table (read-only during the pass): bucketed two-choice (cuckoo) hashing. Key k sits in
// bucket1(k) or bucket2(k), so a lookup is two bucket loads and no probe loop: the lanes of a warp
// stay together whatever their keys, where linear probing sends each lane a different distance.
// With 2 choices and 4 ways placement succeeds far past the kMaxLoad used here (the threshold is
// about 0.97), so a table of 4/5 load needs few evictions. Each block builds its own copy in
// shared memory from the hot-key list (insert_walk below, with atomics); a key that finds no place
// within kMaxKicks is simply not hot in that block and takes the global path, so nothing is lost.
//
// Reduce tables (keys join during the pass): bucketed linear probing. A key's home is bucket1(k);
// it takes the first empty slot of the first bucket with one, so at half load nearly every key is
// settled by its first bucket and the lanes again finish together.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "groupby/hash/two_choice.hpp"
#include "groupby/hash/types.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/cuda/hd.hpp"

namespace tandem::hash_groupby::buckets {

constexpr std::uint32_t kWays = 4;  // slots per bucket
// Hot tables are filled to at most 4/5 of their slots: kLoadNum / kLoadDen keys per slot.
constexpr std::uint32_t kLoadNum = 4, kLoadDen = 5;
constexpr int kMaxKicks = 64;  // evictions before a key is left out of a block's hot table

// Buckets for n hot keys at kMaxLoad.
TANDEM_HD constexpr std::uint32_t buckets_for(std::uint32_t n) {
  const std::uint64_t per = std::uint64_t(kWays) * kLoadNum;  // keys per kLoadDen buckets
  const std::uint64_t b = (std::uint64_t(n) * kLoadDen + per - 1) / per;
  return static_cast<std::uint32_t>(b ? b : 1);
}
// Most hot keys a table of `slots` slots takes (whole buckets only).
TANDEM_HD constexpr std::uint32_t capacity(std::uint32_t slots) {
  return static_cast<std::uint32_t>(std::uint64_t(slots / kWays) * kWays * kLoadNum / kLoadDen);
}

template <class K>
TANDEM_HD std::uint32_t bucket1(K k, std::uint32_t nb) {
  return two_choice::reduce(two_choice::hash1(k), nb);
}
// Independent of bucket1: the key hash (murmur3's finaliser) of the key with a fixed salt.
template <class K>
TANDEM_HD std::uint32_t bucket2(K k, std::uint32_t nb) {
  return two_choice::reduce(hash32(static_cast<K>(k ^ static_cast<K>(0x5bd1e9955bd1e995ull))), nb);
}
// The bucket a key in bucket b moves to when evicted.
template <class K>
TANDEM_HD std::uint32_t other(K k, std::uint32_t b, std::uint32_t nb) {
  const std::uint32_t b1 = bucket1(k, nb);
  return b == b1 ? bucket2(k, nb) : b1;
}

// The cuckoo walk that places one key, written over three slot operations so the same code runs
// sequentially on the host (tests) and with shared-memory atomics on the GPU:
//   read(i) -> key in slot i; claim(i, k) -> true if slot i was empty and now holds k;
//   exchange(i, k) -> the key slot i held, k now there.
// Returns the key left without a place (`empty` when every key found one). `salt` varies the
// evicted slot between walks.
template <class K, class Read, class Claim, class Exchange>
TANDEM_HD K insert_walk(K k, std::uint32_t nb, K empty, std::uint32_t salt, Read&& read, Claim&& claim,
                        Exchange&& exchange) {
  std::uint32_t b = bucket1(k, nb);
  for (int kick = 0; kick < kMaxKicks; ++kick) {
    const std::uint32_t alt = other(k, b, nb);
    for (int pass = 0; pass < 2; ++pass) {
      const std::uint32_t bb = pass ? alt : b;
      for (std::uint32_t w = 0; w < kWays; ++w)
        if (read(bb * kWays + w) == empty && claim(bb * kWays + w, k)) return empty;
    }
    // both buckets full: evict a slot of b and move its key to its other bucket
    const K out = exchange(b * kWays + ((salt + std::uint32_t(kick)) % kWays), k);
    if (out == empty) return empty;
    b = other(out, b, nb);
    k = out;
  }
  return k;
}

// Sequential placement of distinct keys (except `empty`) into nb buckets; the keys left out.
template <class K>
std::vector<K> place(std::span<const K> keys, std::uint32_t nb, K empty, std::vector<K>& table) {
  table.assign(std::size_t(nb) * kWays, empty);
  std::vector<K> left;
  std::uint32_t salt = 0;
  for (K k : keys) {
    if (k == empty) continue;
    const K l = insert_walk<K>(
        k, nb, empty, salt++, [&](std::uint32_t i) { return table[i]; },
        [&](std::uint32_t i, K x) {
          if (table[i] != empty) return false;
          table[i] = x;
          return true;
        },
        [&](std::uint32_t i, K x) { return std::exchange(table[i], x); });
    if (l != empty) left.push_back(l);
  }
  return left;
}

// The slot of k in a two-choice table (host; the GPU reads whole buckets), or -1.
template <class K>
long find(const std::vector<K>& table, K k, std::uint32_t nb) {
  for (std::uint32_t b : {bucket1(k, nb), bucket2(k, nb)})
    for (std::uint32_t w = 0; w < kWays; ++w)
      if (table[std::size_t(b) * kWays + w] == k) return long(b) * kWays + w;
  return -1;
}

}  // namespace tandem::hash_groupby::buckets
