// What the GPU top-k's kernels and host share: object slot, per-round status, select state, launch shape.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "topk/internal.hpp"

namespace tandem::topk::detail {

struct Slot {
  Acc acc;
  unsigned long long mask;
};
static_assert(sizeof(Slot) == 24);

// What the host reads back each round.
struct DevState {
  unsigned long long touched;    // objects first seen (phase 1 / TA)
  unsigned long long completed;  // objects whose every list was read this round
  unsigned long long entrants;   // completed objects that beat the k-th
  unsigned long long remaining;  // phase-2 candidates kept by the last prune
  Key96 kth;
  int have_kth;
  int pad;
  float thr[kMaxLists];  // last score read in each list this round
  // The float NRA's probe (reset each probe): objects seen in some lists whose upper bound reaches
  // the cut; the order key of the k-th best complete float aggregate, and whether it was found
  // (0: fewer than k complete, 1: found, 2: more complete objects than one block selects among).
  unsigned long long open;
  std::uint32_t kth_key;
  int kth_state;
};

// A radix select on the device: the bucket (top `bits` key bits = prefix) holding the k-th best,
// `less` objects before it and `eq` in it; lost = 1 if a pass found no such bucket (a bug).
struct SelectState {
  unsigned long long prefix, less, eq;
  unsigned long long count;  // objects the compaction after the select kept
  int bits, lost;
};

constexpr int kBlock = 256;

constexpr std::uint64_t kGridCap = 65535ull * 16;  // grid-stride loops cover the rest

// The radix select's digit: kDigitBits key bits a pass, a histogram of kBins counts.
constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;

// Entry q of a batch of levels [d, d + width) of every list: list i = q / width, level
// d + q % width (consecutive threads read consecutive entries of one list). The batch's last level
// records each list's score in st->thr, the bound for objects not seen yet.
__device__ __forceinline__ Entry batch_entry(const Entry* L, std::uint64_t m, std::uint64_t d, std::uint64_t width,
                                             std::uint64_t q, DevState* st, std::uint32_t& i) {
  i = static_cast<std::uint32_t>(q / width);
  const std::uint64_t p = d + q % width;
  const Entry x = L[std::uint64_t(i) * m + p];
  if (p == d + width - 1) st->thr[i] = x.score;
  return x;
}

// The aggregate of the last scores read: what an object seen in no list may reach at most.
__host__ __device__ inline double t_agg(const AggSpec& a, const float* thr) {
  Acc t = acc_identity(a.kind);
  for (std::uint32_t i = 0; i < a.n; ++i) t = acc_combine(a.kind, t, acc_of(a, i, thr[i]));
  return acc_score(a, t);
}

}  // namespace tandem::topk::detail
