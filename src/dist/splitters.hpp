// The cuts of a distributed sort: where each rank's sorted keys split so that rank d receives
// the d-th N/P slice of the global order. Bisection over the keys' ordered bits, every cut at
// once, one MPI_Allreduce of P-1 counts per step; equal keys at a cut split by (rank, position).
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "dist/context_impl.hpp"
#include "dist/mpi_check.hpp"
#include "sort/merge_runs.hpp"

namespace tandem::dist {

using detail::KeyOrder;

// Counts of sorted keys at or below (or, with strict, below) each of a batch of ordered-bits
// values: binary searches in the sorted host keys.
template <class K>
struct HostCounter {
  std::span<const K> sorted;
  KeyOrder<K> order;
  using U = typename KeyOrder<K>::U;
  std::vector<std::uint64_t> operator()(std::span<const U> xs, bool strict) const {
    std::vector<std::uint64_t> out(xs.size());
    for (std::size_t j = 0; j < xs.size(); ++j) {
      const U x = xs[j];
      out[j] = strict ? std::uint64_t(std::lower_bound(sorted.begin(), sorted.end(), x,
                                                       [&](K k, U v) { return order.bits(k) < v; }) -
                                      sorted.begin())
                      : std::uint64_t(std::upper_bound(sorted.begin(), sorted.end(), x,
                                                       [&](U v, K k) { return v < order.bits(k); }) -
                                      sorted.begin());
    }
    return out;
  }
};

// Where this rank's n sorted keys are cut: cut[d] .. cut[d+1] go to rank d. Collective.
template <class K, class Counter>
std::vector<std::uint64_t> find_cuts(const Context::Impl& s, std::uint64_t n_local, const Counter& count) {
  using U = typename KeyOrder<K>::U;
  const int p = s.size;
  std::uint64_t n = 0;
  check_mpi(MPI_Allreduce(&n_local, &n, 1, MPI_UINT64_T, MPI_SUM, s.comm), "MPI_Allreduce");
  std::vector<std::uint64_t> cut(std::size_t(p) + 1, 0);
  cut[p] = n_local;
  if (p == 1 || n == 0) return cut;
  const std::size_t m = std::size_t(p) - 1;
  std::vector<std::uint64_t> target(m);
  for (std::size_t j = 0; j < m; ++j)  // the first global position of rank j+1's slice
    target[j] = std::uint64_t((unsigned __int128)n * (j + 1) / std::uint64_t(p));
  // Bisection, all cuts at once: the smallest x with count(<= x) > target is the key at the cut.
  std::vector<U> lo(m, 0), hi(m, std::numeric_limits<U>::max());
  std::vector<std::uint64_t> global(m);
  std::vector<U> mids(m);
  for (;;) {
    bool open = false;
    for (std::size_t j = 0; j < m; ++j) {
      open |= lo[j] < hi[j];
      mids[j] = U(lo[j] + (hi[j] - lo[j]) / 2);
    }
    if (!open) break;  // the same on every rank: lo and hi follow global counts only
    std::vector<std::uint64_t> local = count(std::span<const U>(mids.data(), mids.size()), false);
    for (std::size_t j = 0; j < m; ++j)
      if (lo[j] >= hi[j]) local[j] = 0;
    check_mpi(MPI_Allreduce(local.data(), global.data(), int(m), MPI_UINT64_T, MPI_SUM, s.comm), "MPI_Allreduce");
    for (std::size_t j = 0; j < m; ++j) {
      if (lo[j] >= hi[j]) continue;
      const U mid = U(lo[j] + (hi[j] - lo[j]) / 2);
      if (global[j] > target[j]) hi[j] = mid;
      else lo[j] = U(mid + 1);
    }
  }
  // Keys equal to the cut key: the first (target - global count below it) of them, in
  // (rank, position) order, go below the cut.
  std::vector<std::uint64_t> below = count(std::span<const U>(lo.data(), lo.size()), true);
  std::vector<std::uint64_t> equal = count(std::span<const U>(lo.data(), lo.size()), false);
  std::vector<std::uint64_t> below_all(m), equal_before(m, 0);
  for (std::size_t j = 0; j < m; ++j) equal[j] -= below[j];
  check_mpi(MPI_Allreduce(below.data(), below_all.data(), int(m), MPI_UINT64_T, MPI_SUM, s.comm), "MPI_Allreduce");
  check_mpi(MPI_Exscan(equal.data(), equal_before.data(), int(m), MPI_UINT64_T, MPI_SUM, s.comm), "MPI_Exscan");
  if (s.rank == 0) std::fill(equal_before.begin(), equal_before.end(), 0);  // Exscan leaves rank 0's undefined
  for (std::size_t j = 0; j < m; ++j) {
    const std::uint64_t need = target[j] - below_all[j];
    const std::uint64_t take = need > equal_before[j] ? std::min(need - equal_before[j], equal[j]) : 0;
    cut[j + 1] = below[j] + take;
  }
  return cut;
}

}  // namespace tandem::dist
