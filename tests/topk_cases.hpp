// Top-k inputs whose sums cancel across magnitudes (shared by the CPU and GPU tests): only an
// accumulation that is the same in every order gives one answer on every path.
#pragma once
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "tandem/topk.hpp"

namespace topk_cases {

using tandem::topk::Entry;
using tandem::topk::Lists;

// Lists from per-object scores: scores[o][i] is object o's score in list i; each list sorted
// descending, ties by id descending (to differ from the generator's order).
inline Lists from_scores(const std::vector<std::vector<float>>& scores) {
  Lists l;
  l.m = scores.size();
  l.n = scores.empty() ? 1 : std::uint32_t(scores[0].size());
  for (std::uint32_t i = 0; i < l.n; ++i) {
    std::vector<Entry> li;
    for (std::uint32_t o = 0; o < l.m; ++o) li.push_back(Entry{o, scores[o][i]});
    std::sort(li.begin(), li.end(),
              [](const Entry& a, const Entry& b) { return a.score > b.score || (a.score == b.score && a.id > b.id); });
    l.entries.insert(l.entries.end(), li.begin(), li.end());
  }
  return l;
}

// The reported case: object 0 scores (1e20, 1, -1e20), exactly 1; added in the order NRA reads
// the lists (1e20 first, -1e20 last) it came out 0 and object 1 (0.75) won on one thread.
inline Lists cancelling_lists() {
  return from_scores({{1e20f, 1.0f, -1e20f},
                      {0.25f, 0.25f, 0.25f},
                      {0.0f, 0.5f, 0.0f},
                      {-1e20f, 0.0f, 1e20f},
                      {1e20f, -1e20f, 0.125f}});
}

// m objects, n lists; every score is +-1e20, +-1 or +-1e-20 times a random factor in [1, 2), and
// a third of the objects hold a pair that cancels exactly (x in one list, -x in another).
inline Lists mixed_magnitude_lists(std::uint64_t m, std::uint32_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> f(1.0f, 2.0f);
  const float mag[3] = {1e20f, 1.0f, 1e-20f};
  std::vector<std::vector<float>> s(m, std::vector<float>(n));
  for (auto& o : s) {
    for (auto& x : o) x = mag[rng() % 3] * f(rng) * (rng() % 2 ? 1.0f : -1.0f);
    if (n >= 2 && rng() % 3 == 0) {
      const std::uint32_t i = rng() % n, j = (i + 1 + rng() % (n - 1)) % n;
      o[j] = -o[i];
    }
  }
  return from_scores(s);
}

// A head of `head` objects scoring the same in every list (0.9 and up: the lists' prefixes agree, so
// they look correlated), then m - head objects whose n scores in [0, 0.8] add up to about 0.4 n
// (anti-correlated): the (head + 1)-th best and later lie deep in every list.
inline Lists deep_behind_correlated_head(std::uint64_t m, std::uint32_t n, std::uint64_t head, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<std::vector<float>> s(m, std::vector<float>(n));
  for (std::uint64_t o = 0; o < m; ++o) {
    if (o < head) {
      for (auto& x : s[o]) x = 0.9f + 0.05f * float(o) / float(head);
      continue;
    }
    float mean = 0;
    for (auto& x : s[o]) mean += x = u(rng);
    mean /= float(n);
    for (auto& x : s[o]) x = std::clamp(0.4f + 0.8f * (x - mean), 0.0f, 0.8f);
  }
  return from_scores(s);
}

}  // namespace topk_cases
