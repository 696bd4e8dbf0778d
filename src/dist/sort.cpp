// Sample sort across ranks with exact splitters:
//  1. each rank sorts its keys (tandem::sort: GPU pipeline or CPU radix, as the options say);
//  2. the P-1 cuts of the global order at N*j/P are found by bisection over the keys' ordered
//     bits, each step one MPI_Allreduce of P-1 counts (32 or 64 steps), and equal keys at a cut
//     are split by (rank, position) with one MPI_Exscan, so every rank gets N/P keys (±1);
//  3. one all-to-all exchange of the slices;
//  4. each rank merges the P sorted runs it received (stably, in rank order) in one pass over
//     memory: the output cut into equal parts by a multiway co-rank, each part merged in
//     cache-sized chunks, pairwise level by level, branch-free.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "dist/exchange.hpp"
#include "dist/mpi_check.hpp"
#include "dist/rank_report.hpp"
#include "dist/splitters.hpp"
#include "sort/merge_runs.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/dist.hpp"

namespace tandem::dist {
namespace {

template <class K, class V>
DistReport sort_impl(const Context& ctx, std::vector<K>& keys, std::vector<V>* values, const SortOptions& options) {
  const Context::Impl& s = ctx.impl();
  SortOptions opts = options;
  if (opts.threads <= 0) opts.threads = s.threads;
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

  if (s.size == 1) {  // sorted already: nothing to exchange or merge
    out.count_out = keys.size();
    gather_rank_report(s, out);
    return out;
  }
  const KeyOrder<K> order{opts.descending ? std::numeric_limits<typename KeyOrder<K>::U>::max() : 0};
  const std::vector<std::uint64_t> cut = find_cuts<K>(s, keys.size(), HostCounter<K>{keys, order});
  std::vector<std::uint64_t> counts(std::size_t(s.size));
  for (int d = 0; d < s.size; ++d) counts[d] = cut[d + 1] - cut[d];
  clock.lap(out.report, "splitters", fmt::format("{} cuts by bisection", s.size - 1));

  ExchangeTimes times;
  const Received<K> recv_keys = exchange_kept<K>(s, std::span<const K>(keys), counts, out.traffic, &times);
  Received<V> recv_values;
  if (values) recv_values = exchange_kept<V>(s, std::span<const V>(*values), counts, out.traffic, &times);
  add_exchange_stages(out.report, times, out.traffic);
  clock.restart();

  const int threads = opts.threads;
  const std::vector<std::uint64_t>& runs = recv_keys.runs;
  keys.resize(recv_keys.size);
  if (values) {
    values->resize(recv_values.size);
    detail::merge_runs(recv_keys.data(), recv_values.data(), runs, keys.data(), values->data(), order, threads);
  } else {
    detail::merge_runs(recv_keys.data(), static_cast<char*>(nullptr), runs, keys.data(), static_cast<char*>(nullptr),
                       order, threads);
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

#define TANDEM_DIST_SORT(K)                                                                                      \
  template DistReport sort<K>(const Context&, std::vector<K>&, const SortOptions&);                              \
  template DistReport sort_pairs<K, std::uint32_t>(const Context&, std::vector<K>&, std::vector<std::uint32_t>&, \
                                                   const SortOptions&);                                          \
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
