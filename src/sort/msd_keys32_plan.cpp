#include "sort/msd_keys32_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tandem::detail {
namespace {

std::uint32_t tiles_of(std::uint64_t keys) {
  return static_cast<std::uint32_t>((keys + kMsdScatterTile - 1) / kMsdScatterTile);
}

}  // namespace

MsdKeys32Plan plan_msd_keys32(std::size_t n, std::span<const std::uint32_t, kMsdKeys32TopBuckets> top_sizes,
                              std::uint32_t sub_min, std::uint32_t sub_max, std::size_t min_elements) {
  MsdKeys32Plan p;
  if (!msd_keys32_size_ok(n, min_elements)) {
    p.why = fmt::format("{} keys: the MSD sort takes {}..2^31-1", n, min_elements);
    return p;
  }
  std::uint64_t total = 0;
  for (auto c : top_sizes) total += c;
  if (total != n) {
    p.why = fmt::format("the prefix counts add up to {} keys, not {}", total, n);
    return p;
  }
  if (sub_max > kLowSortMax) {
    p.why = fmt::format("a 16-bit prefix holds {} keys, more than one block sorts ({})", sub_max, kLowSortMax);
    return p;
  }
  p.use = true;
  p.why = fmt::format("sub-buckets of {}..{} keys", sub_min, sub_max);
  p.top.buckets = 1;
  p.top.begin[0] = 0;
  p.top.begin[1] = static_cast<std::uint32_t>(n);
  p.top.tiles[0] = 0;
  p.top.tiles[1] = tiles_of(n);
  p.mid.buckets = kMsdKeys32TopBuckets;
  std::uint32_t at = 0, tiles = 0;
  for (int b = 0; b < kMsdKeys32TopBuckets; ++b) {
    p.mid.begin[b] = at;
    p.mid.tiles[b] = tiles;
    at += top_sizes[b];
    tiles += tiles_of(top_sizes[b]);
  }
  p.mid.begin[kMsdKeys32TopBuckets] = at;
  p.mid.tiles[kMsdKeys32TopBuckets] = tiles;
  // Sizes 0 and 1 need no sort: a class runs when it holds some size in [max(sub_min, 2), sub_max].
  const std::uint32_t least = std::max<std::uint32_t>(sub_min, 2);
  for (std::size_t c = 0; c < kLowSortClasses.size(); ++c) {
    const auto& k = kLowSortClasses[c];
    p.low[c] = sub_max >= least && sub_max > k.lo && least <= k.hi;
  }
  return p;
}

}  // namespace tandem::detail
