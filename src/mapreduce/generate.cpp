// Zipf keys and Zipf text for tests, benchmarks and `tandem gen`.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::mapreduce {

namespace {
std::vector<double> zipf_cdf(std::uint64_t distinct, double s) {
  std::vector<double> cdf(distinct);
  double acc = 0;
  for (std::uint64_t r = 0; r < distinct; ++r) {
    acc += s == 0 ? 1.0 : std::pow(double(r + 1), -s);
    cdf[r] = acc;
  }
  for (auto& c : cdf) c /= acc;
  return cdf;
}
}  // namespace

std::vector<std::uint64_t> zipf_ranks(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed) {
  if (distinct == 0) throw UsageError("zipf: the number of distinct keys must be at least 1");
  if (exponent < 0 || !std::isfinite(exponent)) throw UsageError("zipf: the exponent must be finite and >= 0");
  if (distinct > (std::uint64_t{1} << 32)) throw UsageError("zipf: at most 2^32 distinct keys");
  std::vector<std::uint64_t> out(n);
  if (n == 0) return out;
  const auto cdf = zipf_cdf(distinct, exponent);
  // Guide table: guide[j] = first rank whose cdf exceeds j/G, so the rank of u lies in
  // [guide[j], guide[j+1]] for j = floor(u*G): a short search instead of one over the whole cdf
  // (same result as upper_bound over all of it).
  constexpr std::size_t G = 1 << 16;
  std::vector<std::uint64_t> guide(G + 1);
  {
    std::uint64_t r = 0;
    for (std::size_t j = 0; j <= G; ++j) {
      const double t = double(j) / double(G);
      while (r < distinct && !(cdf[r] > t)) ++r;
      guide[j] = r;
    }
  }
  constexpr std::size_t kChunk = 1 << 16;
  const std::int64_t chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    std::mt19937_64 rng(mix64(seed * 0x9E3779B97F4A7C15ULL + std::uint64_t(c)));
    const std::size_t b = std::size_t(c) * kChunk, e = std::min(n, b + kChunk);
    for (std::size_t i = b; i < e; ++i) {
      const double u = double(rng() >> 11) * 0x1.0p-53;
      const std::size_t j = std::min<std::size_t>(G - 1, static_cast<std::size_t>(u * double(G)));
      const auto lo = cdf.begin() + static_cast<std::ptrdiff_t>(guide[j]);
      const auto hi = cdf.begin() + static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(distinct, guide[j + 1] + 1));
      auto it = std::upper_bound(lo, hi, u);
      out[i] = std::min<std::uint64_t>(distinct - 1, std::uint64_t(it - cdf.begin()));
    }
  }
  return out;
}

std::vector<std::uint32_t> zipf_keys_u32(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed) {
  auto r = zipf_ranks(n, distinct, exponent, seed);
  std::vector<std::uint32_t> k(n);
  for (std::size_t i = 0; i < n; ++i) k[i] = scatter32(static_cast<std::uint32_t>(r[i]));
  return k;
}

std::vector<std::uint64_t> zipf_keys_u64(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed) {
  auto r = zipf_ranks(n, distinct, exponent, seed);
  for (auto& x : r)
    x = (std::uint64_t(scatter32(static_cast<std::uint32_t>(x))) << 32) | (x * 0x9E3779B1ULL & 0xffffffffULL);
  return r;
}

std::vector<std::string> make_vocabulary(std::size_t words, std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5bd1e995);
  std::vector<std::string> v;
  v.reserve(words);
  std::unordered_set<std::string> seen;  // a sorted vector's inserts made a million words take hours
  seen.reserve(words);
  while (v.size() < words) {
    const std::size_t len = (v.size() % 101 == 100) ? 40 + rng() % 21 : 1 + rng() % 14;
    std::string w(len, 'a');
    for (auto& c : w) {
      const auto x = rng() % 40;
      c = x < 26    ? char('a' + x)
          : x < 36  ? char('0' + (x - 26))
          : x < 38  ? char('A' + rng() % 26)
          : x == 38 ? '_'
                    : '\'';
    }
    if (!seen.insert(w).second) continue;
    v.push_back(std::move(w));
  }
  return v;
}

std::string zipf_text(std::size_t bytes, const std::vector<std::string>& vocab, double exponent, std::uint64_t seed) {
  if (vocab.empty()) throw UsageError("text: the vocabulary is empty");
  std::size_t avg = 0;
  for (const auto& w : vocab) avg += w.size();
  avg = avg / vocab.size() + 1;
  const std::size_t n = bytes / avg + 1;
  const auto ranks = zipf_ranks(n, vocab.size(), exponent, seed);
  static const char* seps[] = {" ", " ", " ", " ", ", ", ". ", "\n", " - ", "; "};
  std::string t;
  t.reserve(bytes + 64);
  std::uint64_t x = seed;
  for (std::size_t i = 0; i < n && t.size() < bytes; ++i) {
    t += vocab[ranks[i]];
    x = mix64(x + i);
    t += seps[x % 9];
  }
  if (t.size() > bytes) t.resize(bytes);
  return t;
}

}  // namespace tandem::mapreduce
