// Sample sort across ranks with exact splitters:
//  1. each rank sorts its keys (tandem::sort: GPU pipeline or CPU radix, as the options say);
//  2. the P-1 cuts of the global order at N*j/P are found by bisection over the keys' ordered
//     bits, each step one MPI_Allreduce of P-1 counts (32 or 64 steps), and equal keys at a cut
//     are split by (rank, position) with one MPI_Exscan, so every rank gets N/P keys (±1);
//  3. one all-to-all exchange of the slices;
//  4. each rank merges the P sorted runs it received (stably, in rank order).
#include <parallel/algorithm>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "dist/exchange.hpp"
#include "dist/merge_runs.hpp"
#include "dist/mpi_check.hpp"
#include "dist/rank_report.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/dist.hpp"

namespace tandem::dist {
namespace {

template <class K>
struct KeyOrder {
  using U = ordered_bits_t<K>;
  U flip;  // all ones for descending: the local order is ascending in (bits ^ flip)
  U bits(K k) const { return U(to_ordered(k) ^ flip); }
  bool operator()(K a, K b) const { return bits(a) < bits(b); }
};

// Where this rank's sorted keys are cut: cut[d] .. cut[d+1] go to rank d.
template <class K>
std::vector<std::uint64_t> find_cuts(const Context::Impl& s, std::span<const K> sorted, const KeyOrder<K>& order) {
  using U = typename KeyOrder<K>::U;
  const int p = s.size;
  std::uint64_t n_local = sorted.size(), n = 0;
  check_mpi(MPI_Allreduce(&n_local, &n, 1, MPI_UINT64_T, MPI_SUM, s.comm), "MPI_Allreduce");
  std::vector<std::uint64_t> cut(std::size_t(p) + 1, 0);
  cut[p] = n_local;
  if (p == 1 || n == 0) return cut;
  const std::size_t m = std::size_t(p) - 1;
  std::vector<std::uint64_t> target(m);
  for (std::size_t j = 0; j < m; ++j)  // the first global position of rank j+1's slice
    target[j] = std::uint64_t((unsigned __int128)n * (j + 1) / std::uint64_t(p));
  auto count_le = [&](U x) {
    return std::uint64_t(std::upper_bound(sorted.begin(), sorted.end(), x,
                                          [&](U v, K k) { return v < order.bits(k); }) -
                         sorted.begin());
  };
  auto count_lt = [&](U x) {
    return std::uint64_t(std::lower_bound(sorted.begin(), sorted.end(), x,
                                          [&](K k, U v) { return order.bits(k) < v; }) -
                         sorted.begin());
  };
  // Bisection, all cuts at once: the smallest x with count(<= x) > target is the key at the cut.
  std::vector<U> lo(m, 0), hi(m, std::numeric_limits<U>::max());
  std::vector<std::uint64_t> local(m), global(m);
  for (;;) {
    bool open = false;
    for (std::size_t j = 0; j < m; ++j) {
      open |= lo[j] < hi[j];
      local[j] = lo[j] < hi[j] ? count_le(U(lo[j] + (hi[j] - lo[j]) / 2)) : 0;
    }
    if (!open) break;  // the same on every rank: lo and hi follow global counts only
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
  std::vector<std::uint64_t> below(m), equal(m), below_all(m), equal_before(m, 0);
  for (std::size_t j = 0; j < m; ++j) {
    below[j] = count_lt(lo[j]);
    equal[j] = count_le(lo[j]) - below[j];
  }
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

template <class K, class V>
DistReport sort_impl(const Context& ctx, std::vector<K>& keys, std::vector<V>* values, const SortOptions& opts) {
  const Context::Impl& s = ctx.impl();
  DistReport out;
  out.report.operation = values ? "dist sort_pairs" : "dist sort";
  out.count_in = keys.size();
  StageClock clock;
  ctx.run_agreed([&] {
    if (values && values->size() != keys.size())
      throw UsageError(fmt::format("sort_pairs: {} keys but {} values", keys.size(), values->size()));
    Report local = values ? tandem::sort_pairs(std::span<K>(keys), std::span<V>(*values), opts)
                          : tandem::sort(std::span<K>(keys), opts);
    for (auto& n : local.notes) out.report.note("local sort: " + n);
    for (auto& n : local.notices) out.report.notice(n);
  });
  clock.lap(out.report, "local sort", fmt::format("{} keys", keys.size()));

  const KeyOrder<K> order{opts.descending ? std::numeric_limits<typename KeyOrder<K>::U>::max() : 0};
  const std::vector<std::uint64_t> cut = find_cuts<K>(s, keys, order);
  std::vector<std::uint64_t> counts(std::size_t(s.size));
  for (int d = 0; d < s.size; ++d) counts[d] = cut[d + 1] - cut[d];
  clock.lap(out.report, "splitters", fmt::format("{} cuts by bisection", s.size - 1));

  std::vector<std::uint64_t> runs;
  auto recv_keys = exchange<K>(s, std::span<const K>(keys), counts, runs, out.traffic);
  std::vector<V, io::UninitAllocator<V>> recv_values;
  if (values) {
    std::vector<std::uint64_t> value_runs;
    recv_values = exchange<V>(s, std::span<const V>(*values), counts, value_runs, out.traffic);
  }
  clock.lap(out.report, "exchange", fmt::format("{} B sent, {} B received", out.traffic.bytes_sent,
                                                out.traffic.bytes_received));

  const int threads = opts.threads > 0 ? opts.threads : default_threads();
  keys.resize(recv_keys.size());
  if (values) {
    values->resize(recv_values.size());
    merge_runs(recv_keys.data(), recv_values.data(), runs, keys.data(), values->data(), order, threads);
  } else {
    std::vector<std::pair<K*, K*>> seqs;
    std::size_t at = 0;
    for (auto r : runs) {
      seqs.emplace_back(recv_keys.data() + at, recv_keys.data() + at + r);
      at += r;
    }
    __gnu_parallel::multiway_merge(seqs.begin(), seqs.end(), keys.begin(), std::ptrdiff_t(keys.size()), order,
                                   __gnu_parallel::parallel_tag(threads));
  }
  clock.lap(out.report, "merge", fmt::format("{} runs, {} keys", runs.size(), keys.size()));
  out.count_out = keys.size();
  gather_rank_report(s, out);
  return out;
}

}  // namespace

template <class K>
DistReport sort(const Context& ctx, std::vector<K>& keys, const SortOptions& opts) {
  return sort_impl<K, std::uint32_t>(ctx, keys, nullptr, opts);
}

template <class K, class V>
DistReport sort_pairs(const Context& ctx, std::vector<K>& keys, std::vector<V>& values, const SortOptions& opts) {
  return sort_impl<K, V>(ctx, keys, &values, opts);
}

#define TANDEM_DIST_SORT(K)                                                                                   \
  template DistReport sort<K>(const Context&, std::vector<K>&, const SortOptions&);                          \
  template DistReport sort_pairs<K, std::uint32_t>(const Context&, std::vector<K>&, std::vector<std::uint32_t>&, \
                                                   const SortOptions&);                                      \
  template DistReport sort_pairs<K, std::uint64_t>(const Context&, std::vector<K>&, std::vector<std::uint64_t>&, \
                                                   const SortOptions&);
TANDEM_DIST_SORT(std::uint32_t)
TANDEM_DIST_SORT(std::int32_t)
TANDEM_DIST_SORT(std::uint64_t)
TANDEM_DIST_SORT(std::int64_t)
TANDEM_DIST_SORT(float)
TANDEM_DIST_SORT(double)
#undef TANDEM_DIST_SORT

}  // namespace tandem::dist
