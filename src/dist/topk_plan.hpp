// The pure part of the distributed top-k over lists held by different ranks (TPUT, Cao & Wang,
// PODC 2004): the coordinator's table of partly seen objects, their bounds, the thresholds and
// the pruning. No MPI here: src/dist/topk.cpp moves the entries, tests check the logic alone.
//
// Sums are exact: each list's contribution is the single-process top-k's fixed-point value
// (topk/bounds.hpp, a multiple of 2^scale held as a 128-bit integer), so bounds are integers,
// comparisons are exact, and the final score has the same bits as topk::reference.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "tandem/topk.hpp"
#include "topk/bounds.hpp"

namespace tandem::dist::topk_plan {

using Fixed = __int128;

inline Fixed to_int(topk::detail::Acc a) { return Fixed(a.hi) * (Fixed(1) << 64) + Fixed(a.lo); }
inline topk::detail::Acc to_acc(Fixed v) { return topk::detail::Acc{std::uint64_t(v), std::int64_t(v >> 64)}; }

// List i's contribution of score s (monotone in s: weights are >= 0).
inline Fixed contribution(const topk::detail::AggSpec& spec, std::uint32_t list, float score) {
  return to_int(topk::detail::acc_of(spec, list, score));
}

// The score an exact fixed-point sum stands for, as topk::reference computes it.
inline double score_of(const topk::detail::AggSpec& spec, Fixed sum) {
  return topk::detail::acc_score(spec, to_acc(sum)) + 0.0;
}

// What the coordinator knows of list i without any entry: every object gets at least low
// (the contribution of the list's last score) and at most cap (of the best score not yet sent;
// cap == low for a list whose scores are all equal, or once it has been sent whole).
struct ListBound {
  Fixed low{0};
  Fixed cap{0};
  bool active() const { return cap > low; }
};

// The phase-2 threshold: each holder sends the entries of list i with contribution - low_i >= T.
// An object none of them holds gets less than T above low in every active list, so below
// tau - 1 + 1 = tau in all: strictly worse than the k objects whose lower bounds reach tau.
// active: the lists with cap > low (at least 1). T <= 0 means "send everything".
inline Fixed phase2_threshold(Fixed tau, Fixed low_sum, std::uint32_t active) {
  const Fixed above = tau - low_sum;  // what the active lists must add to reach tau
  const Fixed a = Fixed(active);
  if (above <= 0) return above / a;  // rounds toward zero: <= 0 either way
  return (above + a - 1) / a;        // ceil
}

// The k-th largest of values (values.size() >= k >= 1).
inline Fixed kth_largest(std::vector<Fixed> values, std::uint64_t k) {
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(k - 1), values.end(), std::greater<Fixed>{});
  return values[k - 1];
}

// The objects seen so far: for each, the sum of the contributions seen and which lists they came from.
class Candidates {
 public:
  explicit Candidates(std::span<const ListBound> lists) : lists_(lists.begin(), lists.end()) {}

  void set_cap(std::uint32_t list, Fixed cap) { lists_[list].cap = cap; }
  const ListBound& list(std::uint32_t i) const { return lists_[i]; }
  std::uint32_t active_lists() const {
    return std::uint32_t(std::count_if(lists_.begin(), lists_.end(), [](const ListBound& b) { return b.active(); }));
  }
  Fixed low_sum() const {
    Fixed s = 0;
    for (const auto& b : lists_) s += b.low;
    return s;
  }

  // Adds list `list`'s contribution for object `id`; a pair already seen (an entry looked up, then
  // sent again in phase 2) counts once.
  void add(std::uint32_t list, std::uint32_t id, Fixed c) {
    Slot& s = slots_[id];
    const std::uint64_t bit = std::uint64_t{1} << list;
    if (s.seen & bit) return;
    s.sum += c;
    s.seen |= bit;
  }
  std::size_t size() const { return slots_.size(); }
  std::vector<std::uint32_t> objects() const {  // sorted
    std::vector<std::uint32_t> ids;
    ids.reserve(slots_.size());
    for (const auto& [id, s] : slots_) ids.push_back(id);
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  // Every unseen list at its low (lower) or at its cap (upper).
  Fixed lower(std::uint32_t id) const { return bound(slots_.at(id), false); }
  Fixed upper(std::uint32_t id) const { return bound(slots_.at(id), true); }
  std::uint64_t seen(std::uint32_t id) const { return slots_.at(id).seen; }

  // The k-th best lower bound over the objects seen; k <= size().
  Fixed kth_lower(std::uint64_t k) const {
    std::vector<Fixed> v;
    v.reserve(slots_.size());
    for (const auto& [id, s] : slots_) v.push_back(bound(s, false));
    return kth_largest(std::move(v), k);
  }

  // The objects that may still be in the top k: upper bound >= tau, where k objects have lower
  // bounds >= tau (an equal upper bound stays: the smaller id wins ties). Sorted by id.
  std::vector<std::uint32_t> survivors(Fixed tau) const {
    std::vector<std::uint32_t> out;
    for (const auto& [id, s] : slots_)
      if (bound(s, true) >= tau) out.push_back(id);
    std::sort(out.begin(), out.end());
    return out;
  }

  // The active lists whose score of `id` the coordinator lacks.
  std::uint64_t missing(std::uint32_t id) const {
    std::uint64_t m = 0;
    for (std::uint32_t i = 0; i < lists_.size(); ++i)
      if (lists_[i].active()) m |= std::uint64_t{1} << i;
    return m & ~slots_.at(id).seen;
  }

 private:
  struct Slot {
    Fixed sum{0};
    std::uint64_t seen{0};
  };
  Fixed bound(const Slot& s, bool up) const {
    Fixed v = s.sum;
    for (std::uint32_t i = 0; i < lists_.size(); ++i)
      if (!(s.seen >> i & 1)) v += up ? lists_[i].cap : lists_[i].low;
    return v;
  }
  std::vector<ListBound> lists_;
  std::unordered_map<std::uint32_t, Slot> slots_;
};

// The k best of items by topk::better, best first.
inline std::vector<topk::Item> best_k(std::vector<topk::Item> items, std::uint64_t k) {
  k = std::min<std::uint64_t>(k, items.size());
  std::partial_sort(items.begin(), items.begin() + std::ptrdiff_t(k), items.end(), topk::better);
  items.resize(k);
  return items;
}

}  // namespace tandem::dist::topk_plan
