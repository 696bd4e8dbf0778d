// How many distinct keys a group-by meets, from a sample of its input: the GPU hash engine sizes
// its global table by it, the CPU dictionary and the distributed plan their guesses. Pure code,
// tested on the CPU.
//
// Chao1 (D_s + f1^2 / 2 f2, bias-corrected) is a lower bound: on a heavy tail (Zipf) it sees too
// few keys seen once and misses the many rare keys the rest of the input holds (Zipf 1.0 over 1M
// keys, 1% sample: ~0.6M of 1M; Zipf 2.0: 1.8K of 16K). A table sized too small probes long and
// overflows into a grow. Good–Turing gives an upper bound instead: f1 / Ms of the remaining
// records carry a key the sample has not seen, and each can be new at most once. A table is
// cheap while it stays well inside the L2 cache, so it is sized for the upper bound up to
// `cheap_keys` (what fits there), and for Chao1 beyond.
#pragma once
#include <algorithm>
#include <cstdint>

namespace tandem::distinct_estimate {

struct Sample {
  std::uint64_t records{0};  // Ms: records sampled
  std::uint64_t total{0};    // M: records in the whole input (>= Ms)
  double distinct{0};        // D_s: distinct keys in the sample
  double once{0};            // f1: keys seen exactly once
  double twice{0};           // f2: keys seen exactly twice
};

struct Estimate {
  double chao1{0};  // lower bound
  double upper{0};  // Good–Turing upper bound
  double keys{0};   // what the table is sized for
};

inline Estimate estimate(const Sample& s, double cheap_keys) {
  Estimate e;
  const double rest = double(s.total - std::min(s.records, s.total));
  const double most = s.distinct + rest;  // every remaining record a new key
  if (s.records == 0 || rest == 0) {
    e.chao1 = e.upper = e.keys = s.records == 0 ? most : s.distinct;
    return e;
  }
  e.chao1 = std::clamp(s.distinct + s.once * std::max(0.0, s.once - 1) / (2.0 * (s.twice + 1)), s.distinct, most);
  e.upper = std::clamp(s.distinct + rest * s.once / double(s.records), e.chao1, most);
  e.keys = std::max(e.chao1, std::min(e.upper, cheap_keys));
  return e;
}

}  // namespace tandem::distinct_estimate
