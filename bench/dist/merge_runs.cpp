// bench_dist_merge_runs: the merge stage of the distributed sort alone (no MPI traffic): P sorted
// runs of 2^N u32 keys in all merged into one, the one-pass multiway merge (src/sort/merge_runs.hpp:
// one pass over memory, the log2 P levels in cache-sized chunks) against the pairwise tree merge it
// replaced (log2 P passes over memory, each cut by two-way co-ranking; kept here only as the
// anchor). Both results are checked against each other and for order. When every core merges, the
// merge is bound by memory bandwidth, so every rank of the job runs the same merge at the same time
// (as the ranks of a distributed sort do) and a time is the slowest rank's; rank 0 prints.
// On the 16-core host, as the 4- and 8-rank sorts of 2^28 keys merge:
//   mpirun -np 4 --bind-to none bench_dist_merge_runs --log2 26 --threads 4 --runs 4
//   mpirun -np 8 --bind-to none bench_dist_merge_runs --log2 25 --threads 2 --runs 8
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "dist/splitters.hpp"
#include "harness.hpp"
#include "mpi_bench.hpp"
#include "sort/merge_runs.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/sort.hpp"

namespace {

// The anchor's two-way merge, as it was: front to back, ternary choices.
template <class K, class V, class Less>
void old_merge_range(const K* ka, const V* va, std::size_t na, const K* kb, const V* vb, std::size_t nb, K* ko, V* vo,
                     Less less) {
  std::size_t i = 0, j = 0, o = 0;
  while (i < na && j < nb) {
    const bool take_b = less(kb[j], ka[i]);
    ko[o] = take_b ? kb[j] : ka[i];
    if (vo) vo[o] = take_b ? vb[j] : va[i];
    j += take_b;
    i += !take_b;
    ++o;
  }
  std::copy(ka + i, ka + na, ko + o);
  if (vo) std::copy(va + i, va + na, vo + o);
  o += na - i;
  std::copy(kb + j, kb + nb, ko + o);
  if (vo) std::copy(vb + j, vb + nb, vo + o);
}

// The number of elements taken from a among the first i of the stable merge of a and b.
template <class K, class Less>
std::size_t two_way_co_rank(std::size_t i, std::span<const K> a, std::span<const K> b, Less less) {
  std::size_t lo = i > b.size() ? i - b.size() : 0;
  std::size_t hi = std::min(i, a.size());
  while (lo < hi) {
    const std::size_t j = lo + (hi - lo) / 2;
    if (i - j > 0 && !less(b[i - j - 1], a[j])) lo = j + 1;
    else hi = j;
  }
  return lo;
}

// The anchor: pairwise merges in a tree, each merge cut into equal parts; keys/values are scratch.
template <class K, class V, class Less>
void tree_merge(K* keys, V* values, std::vector<std::uint64_t> runs, K* out_keys, V* out_values, Less less,
                int threads) {
  std::size_t n = 0;
  for (auto r : runs) n += std::size_t(r);
  K* src_k = keys;
  V* src_v = values;
  K* dst_k = out_keys;
  V* dst_v = out_values;
  bool in_out = false;
  while (runs.size() > 1) {
    std::vector<std::uint64_t> next;
    std::size_t at = 0;
    for (std::size_t r = 0; r < runs.size(); r += 2) {
      const std::size_t na = runs[r], nb = r + 1 < runs.size() ? runs[r + 1] : 0;
      const K* ka = src_k + at;
      const K* kb = ka + na;
      const V* va = src_v ? src_v + at : nullptr;
      const V* vb = va ? va + na : nullptr;
      const std::size_t total = na + nb;
      const int parts = int(std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(threads), total / 4096 + 1)));
#pragma omp parallel for num_threads(parts) schedule(static)
      for (int t = 0; t < parts; ++t) {
        const std::size_t i0 = total * std::size_t(t) / std::size_t(parts);
        const std::size_t i1 = total * std::size_t(t + 1) / std::size_t(parts);
        const std::span<const K> a(ka, na), b(kb, nb);
        const std::size_t j0 = two_way_co_rank(i0, a, b, less), j1 = two_way_co_rank(i1, a, b, less);
        old_merge_range(ka + j0, va ? va + j0 : nullptr, j1 - j0, kb + (i0 - j0), vb ? vb + (i0 - j0) : nullptr,
                        (i1 - j1) - (i0 - j0), dst_k + at + i0, dst_v ? dst_v + at + i0 : nullptr, less);
      }
      next.push_back(total);
      at += total;
    }
    runs = std::move(next);
    std::swap(src_k, dst_k);
    std::swap(src_v, dst_v);
    in_out = !in_out;
  }
  if (!in_out) {
    std::copy(keys, keys + n, out_keys);
    if (values) std::copy(values, values + n, out_values);
  }
}

double slowest_rank(double seconds) {
  double m = seconds;
  MPI_Allreduce(&seconds, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

int run(int argc, char** argv) {
  tandem::bench::Bench b("dist_merge_runs", argc, argv);
  const int log2 = int(b.get_int("--log2", b.quick() ? 20 : 26));
  const int threads = int(b.get_int("--threads", tandem::default_threads()));
  const int only_runs = int(b.get_int("--runs", 0));  // 0: 2, 4 and 8
  const std::size_t n = std::size_t{1} << log2;
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const tandem::dist::KeyOrder<std::uint32_t> less{0};
  std::mt19937 rng(23);
  std::vector<std::uint32_t> input(n);
  for (auto& k : input) k = rng();
  std::vector<std::uint32_t> values(n), out_keys(n), out_values(n), anchor_keys(n), anchor_values(n), scratch_k(n),
      scratch_v(n);
  for (int p : {2, 4, 8}) {
    if (only_runs && p != only_runs) continue;
    std::vector<std::uint64_t> runs;
    for (int r = 0; r < p; ++r)
      runs.push_back(n * std::size_t(r + 1) / std::size_t(p) - n * std::size_t(r) / std::size_t(p));
    std::vector<std::uint32_t> keys = input;
    std::size_t at = 0;
    for (auto len : runs) {
      tandem::sort(std::span<std::uint32_t>(keys.data() + at, std::size_t(len)));
      at += std::size_t(len);
    }
    for (std::size_t i = 0; i < n; ++i) values[i] = std::uint32_t(i);
    for (const bool pairs : {false, true}) {
      const std::string c =
          fmt::format("{} runs, 2^{} u32 {}, {} threads x {} ranks", p, log2, pairs ? "pairs" : "keys", threads, ranks);
      std::uint32_t* v_in = pairs ? scratch_v.data() : nullptr;
      // The tree merge uses its input as scratch: each run starts from a fresh copy, not timed.
      auto fresh_input = [&] {
        std::copy(keys.begin(), keys.end(), scratch_k.begin());
        if (pairs) std::copy(values.begin(), values.end(), scratch_v.begin());
      };
      const auto s_tree = b.measure([&] {
        fresh_input();
        MPI_Barrier(MPI_COMM_WORLD);
        tandem::Stopwatch w;
        tree_merge(scratch_k.data(), v_in, runs, anchor_keys.data(), pairs ? anchor_values.data() : nullptr, less,
                   threads);
        return slowest_rank(w.seconds());
      });
      const auto s_multi = b.measure([&] {
        fresh_input();
        MPI_Barrier(MPI_COMM_WORLD);
        tandem::Stopwatch w;
        tandem::detail::merge_runs(scratch_k.data(), v_in, runs, out_keys.data(), pairs ? out_values.data() : nullptr,
                                   less, threads);
        return slowest_rank(w.seconds());
      });
      const bool ok = std::is_sorted(out_keys.begin(), out_keys.end()) && out_keys == anchor_keys &&
                      (!pairs || out_values == anchor_values);
      b.record(c, "pairwise tree merge (anchor)", s_tree, double(n), "keys",
               std::is_sorted(anchor_keys.begin(), anchor_keys.end()));
      b.record(c, "one-pass multiway merge", s_multi, double(n), "keys", ok);
      if (!ok) b.fail(c + ": the multiway merge differs from the tree merge");
      b.info(c + ": tree / multiway time", s_tree.median / s_multi.median, "x");
    }
  }
  return b.finish();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0 && !std::freopen("/dev/null", "w", stdout)) MPI_Abort(MPI_COMM_WORLD, 1);
  const int status = tandem::bench::run_reporting_errors("bench_dist_merge_runs", [&] { return run(argc, argv); });
  MPI_Finalize();
  return status;
}
