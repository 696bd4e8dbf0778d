// Helpers shared by the top-k sources (CPU and CUDA); not part of the public API.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "bounds.hpp"
#include "tandem/topk.hpp"

namespace tandem::topk::detail {

// validate()'s checks of n, m and the entry count only (no pass over the scores): InputError.
void check_shape(const Lists& l);

// Whether every list passes validate()'s checks (finite scores, descending, ids below m, each id
// once), on `threads` threads with a bitmap of ids per thread (list_checks.cpp). False says only
// that some check fails: the sequential check then names the first problem.
bool lists_pass_checks(const Lists& l, int threads);

// Each list's largest |score| (lists are sorted: at one of its ends); 0 for empty lists.
std::vector<float> list_max_abs(const Lists& l);

// The unit 2^scale of exact sums: with every contribution below 2^e (weights are >= 0, so the
// largest |contribution| of list i is its weight times its largest |score|), 64 of them stay
// below 2^(e + 6), far inside 128 bits at 2^(e - 120) a unit; a score of list i is exact when it is
// at least 2^96 times smaller than that largest contribution. InputError if a weighted score
// overflows a double.
int sum_scale(const AggSpec& a, const std::vector<float>& max_abs);

// A bound on |float aggregate - exact score| of every object (approx_value/approx_combine in list
// order against acc_of/acc_combine/acc_score), or infinity when the float aggregate could overflow.
double approx_error(const AggSpec& a, const std::vector<float>& max_abs);

// The aggregate for the kernels and bounds; max_abs from list_max_abs.
inline AggSpec spec_of(const Aggregate& a, std::uint32_t n, const std::vector<float>& max_abs) {
  AggSpec s;
  s.n = n;
  switch (a.kind) {
    case ScoreCombine::sum: s.kind = kSum; break;
    case ScoreCombine::wsum: s.kind = kWsum; break;
    case ScoreCombine::min: s.kind = kMin; break;
    case ScoreCombine::max: s.kind = kMax; break;
  }
  for (std::size_t i = 0; i < a.weights.size() && i < 64; ++i) s.w[i] = a.weights[i];
  s.scale = sum_scale(s, max_abs);
  return s;
}
inline AggSpec spec_of(const Aggregate& a, const Lists& l) { return spec_of(a, l.n, list_max_abs(l)); }

// Adaptive stride: the first batch, and the next one after a batch of `stride` ending at `depth`.
// Phase 1 doubles; phase 2 grows with the depth read (at most a quarter more), bounding overshoot.
inline std::uint64_t first_stride(std::uint64_t k, std::uint64_t floor) { return std::max<std::uint64_t>(floor, k); }
inline std::uint64_t next_stride(std::uint64_t stride, std::uint64_t depth, bool phase2, std::uint64_t floor) {
  if (!phase2) return std::max(stride * 2, floor);
  return std::max(floor, depth / 4);
}

// Lists whose prefixes share objects more than this many times as often as independent lists
// would (Estimate::ratio) count as correlated.
constexpr double kCorrelatedRatio = 3.0;

// The float NRA's depths: first where k objects are expected to have been seen in every list of n
// independent lists (m (k/m)^(1/n), at least `floor`); then twice as deep while fewer than a
// quarter of k objects are complete, half as deep again after.
std::uint64_t nra_first_depth(std::uint64_t m, std::uint32_t n, std::uint64_t k, std::uint64_t floor);
inline std::uint64_t nra_next_depth(std::uint64_t depth, std::uint64_t m, std::uint64_t complete = ~0ull,
                                    std::uint64_t k = 0) {
  const bool far = complete < k / 4;
  return std::min(m, depth + std::max<std::uint64_t>(far ? depth : depth / 2, 1));
}

// ---- NRA in one launch (GPU) ----
// Each list's leading run: how many of its first entries equal its top score (at upload).
std::vector<std::uint64_t> list_top_runs(const Lists& l);
// No depth shallower than this can end NRA: there T, the aggregate of the last scores read, still
// equals the aggregate of the top scores, which no object exceeds, so no complete object beats it.
// T falls only once some list that counts (a weight > 0) is read past its leading run. m when no
// list counts (all weights 0: only the full depth decides).
std::uint64_t nra_least_depth(const AggSpec& a, const std::vector<std::uint64_t>& top_runs, std::uint64_t m);
// The one-launch NRA's first depth: the least depth, or, when the lists that count tie their tops
// over runs within twice each other (data clamped at a maximum, like the correlated generator's),
// past the longest run - until every such list has fallen below its top, an object seen at the top
// of some lists and not yet in the others keeps the bound at the top, so a round there would not
// stop. At least k (k complete objects take k levels of list 0; k + 1 for one list) and `floor`;
// at most m.
std::uint64_t shallow_first_depth(const AggSpec& a, const std::vector<std::uint64_t>& top_runs, std::uint64_t m,
                                  std::uint64_t k, std::uint64_t floor);
// The deepest level the one-launch NRA reads before giving up (the stop is not shallow: the
// other paths answer): a sixteenth of the lists, or the first depth when that is deeper.
inline std::uint64_t shallow_budget(std::uint64_t m, std::uint64_t first) {
  return std::min(m, std::max(first, m / 16));
}

// Writes stats into the report (details + a line per list when few).
void describe(Result& r, std::uint64_t m);

// Fills r.stats for a run that read `depth` levels of each of n lists, then describe().
inline void finish(Result& r, const char* algo, std::string where, std::uint32_t n, std::uint64_t m,
                   std::uint64_t depth, std::uint64_t candidates, std::uint64_t rounds, bool adaptive, bool finished) {
  r.stats.algo = algo;
  r.stats.where = std::move(where);
  r.stats.depth.assign(n, depth);
  r.stats.candidates = candidates;
  r.stats.rounds = rounds;
  r.stats.adaptive = adaptive;
  r.stats.finished = finished;
  describe(r, m);
}

// Keeps the k best keys in a max-heap (worst on top) ordered by `less`.
template <class Key, class Less>
void push_bounded(std::vector<Key>& heap, const Key& key, std::uint64_t k, Less less) {
  if (heap.size() < k) {
    heap.push_back(key);
    std::push_heap(heap.begin(), heap.end(), less);
  } else if (less(key, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), less);
    heap.back() = key;
    std::push_heap(heap.begin(), heap.end(), less);
  }
}

// The GPU paths reach a DeviceLists' state through this (DeviceLists::Impl lives in gpu/lists.cuh).
struct DeviceListsAccess {
  static DeviceLists::Impl& impl(DeviceLists& d) { return *d.impl_; }
};

}  // namespace tandem::topk::detail
