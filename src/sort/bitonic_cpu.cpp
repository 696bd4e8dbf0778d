// Bitonic merge sort on the CPU, any length. The network uses the "flip" first stage of each
// merge so every comparator sorts ascending: a virtual +infinity padding up to the next power of
// two then never moves, and comparators touching it are skipped.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "tandem/bitonic.hpp"
#include "tandem/error.hpp"
#include "tandem/key_order.hpp"
#include "tandem/timing.hpp"

namespace tandem::bitonic {
namespace {

// Sorts `bits` (ascending) and applies the same exchanges to `aux` when given.
template <class U, class A>
void network(std::vector<U>& bits, std::vector<A>* aux) {
  const std::size_t n = bits.size();
  if (n < 2) return;
  const std::size_t padded = std::bit_ceil(n);
  auto cx = [&](std::size_t i, std::size_t j) {
    if (j < n && bits[j] < bits[i]) {
      std::swap(bits[i], bits[j]);
      if (aux) std::swap((*aux)[i], (*aux)[j]);
    }
  };
  for (std::size_t size = 2; size <= padded; size <<= 1) {
    for (std::size_t i = 0; i < padded; ++i) {  // flip stage: i against its mirror in the block
      const std::size_t j = i ^ (size - 1);
      if (j > i && i < n) cx(i, j);
    }
    for (std::size_t stride = size >> 2; stride > 0; stride >>= 1)
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t j = i ^ stride;
        if (j > i) cx(i, j);
      }
  }
}

template <class K>
std::vector<ordered_bits_t<K>> encode(std::span<K> keys, bool descending) {
  std::vector<ordered_bits_t<K>> b(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) b[i] = descending ? ~to_ordered(keys[i]) : to_ordered(keys[i]);
  return b;
}

template <class K>
K decode(ordered_bits_t<K> b, bool descending) {
  return from_ordered<K>(descending ? ~b : b);
}

}  // namespace

template <class K>
Report sort(std::span<K> keys, const SortOptions& opts) {
  Report r;
  r.operation = "sort (bitonic)";
  Stopwatch w;
  auto bits = encode(keys, opts.descending);
  network<ordered_bits_t<K>, int>(bits, nullptr);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = decode<K>(bits[i], opts.descending);
  r.add("CPU bitonic network", "cpu", w.seconds(), fmt::format("{} keys", keys.size()));
  return r;
}

template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts) {
  if (keys.size() != values.size())
    throw UsageError(fmt::format("bitonic sort_pairs: {} keys but {} values", keys.size(), values.size()));
  Report r;
  r.operation = "sort (bitonic)";
  Stopwatch w;
  // Sort (key, original index) so equal keys keep their input order, then gather the values.
  auto bits = encode(keys, opts.descending);
  std::vector<std::uint64_t> idx(keys.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::vector<unsigned __int128> wide(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) wide[i] = (static_cast<unsigned __int128>(bits[i]) << 64) | i;
  network<unsigned __int128, int>(wide, nullptr);
  std::vector<V> v2(values.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto src = static_cast<std::size_t>(static_cast<std::uint64_t>(wide[i]));
    keys[i] = decode<K>(static_cast<ordered_bits_t<K>>(wide[i] >> 64), opts.descending);
    v2[i] = values[src];
  }
  std::copy(v2.begin(), v2.end(), values.begin());
  r.add("CPU bitonic network", "cpu", w.seconds(), fmt::format("{} pairs", keys.size()));
  return r;
}

#define TANDEM_BITONIC_KEYS(K) template Report sort<K>(std::span<K>, const SortOptions&);
#define TANDEM_BITONIC_PAIRS(K, V) template Report sort_pairs<K, V>(std::span<K>, std::span<V>, const SortOptions&);
#define TANDEM_BITONIC_ALL(K) \
  TANDEM_BITONIC_KEYS(K) TANDEM_BITONIC_PAIRS(K, std::uint32_t) TANDEM_BITONIC_PAIRS(K, std::uint64_t)
TANDEM_BITONIC_ALL(std::uint32_t)
TANDEM_BITONIC_ALL(std::int32_t)
TANDEM_BITONIC_ALL(std::uint64_t)
TANDEM_BITONIC_ALL(std::int64_t)
TANDEM_BITONIC_ALL(float)
TANDEM_BITONIC_ALL(double)

}  // namespace tandem::bitonic
