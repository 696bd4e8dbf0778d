#include "dist/groupby_plan.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "tandem/mapreduce/distinct_estimate.hpp"

namespace tandem::dist {

std::vector<std::size_t> sample_rows(std::uint64_t rows) {
  std::vector<std::size_t> out;
  if (rows <= kGroupSample) {
    for (std::size_t i = 0; i < rows; ++i) out.push_back(i);
    return out;
  }
  std::mt19937_64 rng(0x5eed);
  std::uniform_int_distribution<std::uint64_t> pick(0, rows - 1);
  for (std::uint64_t j = 0; j < kGroupSample; ++j) out.push_back(static_cast<std::size_t>(pick(rng)));
  return out;
}

std::uint64_t estimate_groups(std::vector<std::uint64_t> sample_hashes, std::uint64_t rows) {
  std::sort(sample_hashes.begin(), sample_hashes.end());
  mapreduce::distinct_estimate::Sample s;
  s.records = sample_hashes.size();
  s.total = std::max<std::uint64_t>(rows, s.records);
  for (std::size_t i = 0; i < sample_hashes.size();) {
    std::size_t j = i;
    while (j < sample_hashes.size() && sample_hashes[j] == sample_hashes[i]) ++j;
    s.distinct += 1;
    s.once += j - i == 1;
    s.twice += j - i == 2;
    i = j;
  }
  const double groups = mapreduce::distinct_estimate::estimate(s, 0).chao1;
  return std::min<std::uint64_t>(rows, static_cast<std::uint64_t>(groups));
}

bool shuffle_rows_instead(std::uint64_t groups, std::uint64_t rows) { return rows > 0 && 3 * groups >= 2 * rows; }

}  // namespace tandem::dist
