// Indices ordered by partition, a partition being the top bits of a 64-bit key hash (running
// groups place a key by the low ones): one counting pass and one scatter, stable, so that each
// partition's indices stay ascending.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tandem::sink {

// Writes 0 .. hashes.size() - 1 to order (as many places) so that partition p, the top `bits`
// (1–63) bits of hashes[i], is order[starts[p] .. starts[p + 1]); returns starts (2^bits + 1).
template <class Index>
std::vector<std::size_t> order_by_top_bits(std::span<const std::uint64_t> hashes, int bits, Index* order) {
  const int shift = 64 - bits;
  std::vector<std::size_t> starts((std::size_t{1} << bits) + 1, 0);
  for (const std::uint64_t h : hashes) ++starts[(h >> shift) + 1];
  for (std::size_t p = 1; p < starts.size(); ++p) starts[p] += starts[p - 1];
  std::vector<std::size_t> next(starts.begin(), starts.end() - 1);
  for (std::size_t i = 0; i < hashes.size(); ++i) order[next[hashes[i] >> shift]++] = static_cast<Index>(i);
  return starts;
}

}  // namespace tandem::sink
