#include "tandem/core/timing.hpp"

#include <algorithm>
#include <numeric>

namespace tandem {

Stats summarize(std::vector<double> s) {
  Stats r;
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  r.samples = static_cast<int>(s.size());
  r.min = s.front();
  r.max = s.back();
  const std::size_t n = s.size();
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r.mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(n);
  return r;
}

}  // namespace tandem
