// Synthetic ranked lists: uniform, correlated, anti-correlated and Zipf scores. Every score comes from
// a counter-based hash of (seed, list, object), so the output depends on the seed alone.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/topk.hpp"

namespace tandem::topk {
namespace {

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) as a multiple of 2^-24.
double unit(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  return double(splitmix(splitmix(seed ^ (stream * 0x632BE59BD9B4E019ull)) + i) >> 40) * 0x1p-24;
}

// Onto the grid of multiples of 2^-24 in [0, 1).
float quantize(double x) {
  x = std::clamp(x, 0.0, 1.0 - 0x1p-24);
  return float(std::floor(x * 0x1p24) * 0x1p-24);
}

}  // namespace

Lists generate(const GenOptions& o) {
  if (o.lists < 1 || o.lists > kMaxLists)
    throw UsageError(fmt::format("lists = {}: must be between 1 and {}", o.lists, kMaxLists));
  if (o.objects > (std::uint64_t{1} << 32)) throw UsageError(fmt::format("objects = {}: at most 2^32", o.objects));
  const int threads = o.threads > 0 ? o.threads : default_threads();
  Lists l;
  l.n = o.lists;
  l.m = o.objects;
  l.entries.resize(std::size_t(l.n) * l.m);
  const std::uint64_t m = l.m;
  const std::uint32_t n = l.n;
  const auto mm = static_cast<std::int64_t>(m);

  if (o.dist == Dist::zipf) {
    // List i scores its objects 1/(r+1) by a random rank r (a per-list permutation): a few
    // objects score high, most near zero (and many tie at the smallest grid values).
    for (std::uint32_t i = 0; i < n; ++i) {
      std::vector<std::uint32_t> perm(m);
      std::iota(perm.begin(), perm.end(), 0u);
      for (std::uint64_t j = m; j > 1; --j) {
        const std::uint64_t r = splitmix(splitmix(o.seed + 7919 * (i + 1)) + j) % j;
        std::swap(perm[j - 1], perm[r]);
      }
      Entry* out = l.entries.data() + std::size_t(i) * m;
#pragma omp parallel for num_threads(threads)
      for (std::int64_t r = 0; r < mm; ++r) out[r] = Entry{perm[r], quantize(1.0 / double(r + 1))};
    }
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t j = 0; j < mm; ++j) {
      double x[kMaxLists];
      const auto id = static_cast<std::uint64_t>(j);
      for (std::uint32_t i = 0; i < n; ++i) x[i] = unit(o.seed, i + 1, id);
      if (o.dist == Dist::correlated) {
        const double base = unit(o.seed, 1000, id);
        for (std::uint32_t i = 0; i < n; ++i) x[i] = base + (x[i] - 0.5) * 0.1;
      } else if (o.dist == Dist::anticorrelated) {
        // Near the hyperplane sum = n/2: high in one list means low in the others.
        double mean = 0;
        for (std::uint32_t i = 0; i < n; ++i) mean += x[i];
        mean /= n;
        const double jitter = (unit(o.seed, 1001, id) - 0.5) * 0.05;
        for (std::uint32_t i = 0; i < n; ++i) x[i] = x[i] - mean + 0.5 + jitter;
      }
      for (std::uint32_t i = 0; i < n; ++i)
        l.entries[std::size_t(i) * m + id] = Entry{std::uint32_t(id), quantize(x[i])};
    }
  }
  // Each list by score descending, ties by id ascending (any tie order would be valid input).
#pragma omp parallel for num_threads(std::min <int>(threads, int(n))) schedule(dynamic, 1)
  for (int i = 0; i < int(n); ++i) {
    Entry* b = l.entries.data() + std::size_t(i) * m;
    std::sort(b, b + m,
              [](const Entry& a, const Entry& c) { return a.score > c.score || (a.score == c.score && a.id < c.id); });
  }
  return l;
}

}  // namespace tandem::topk
