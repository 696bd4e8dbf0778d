// Top-k on the CPU: brute-force reference, full scan, NRA (1 thread = the paper's baseline, or many
// with atomics) and TA. NRA and TA share the (score desc, id asc) key and bounds of bounds.hpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <queue>

#include <fmt/format.h>
#include <omp.h>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::topk {

using namespace detail;

namespace {

struct Slot {
  Acc acc;
  std::uint64_t mask;
};

int threads_of(const Options& o) { return o.threads > 0 ? o.threads : default_threads(); }

std::vector<Item> items_of(const std::vector<Key96>& keys) {
  std::vector<Item> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(Item{k.id, key_score(k.hi)});
  return out;
}

bool key_lt(const Key96& a, const Key96& b) { return key_less(a, b); }

// Keeps the k smallest keys of top ∪ add, sorted.
void merge_top(std::vector<Key96>& top, const std::vector<Key96>& add, std::uint64_t k) {
  if (add.empty()) return;
  top.insert(top.end(), add.begin(), add.end());
  const std::size_t keep = std::min<std::size_t>(k, top.size());
  std::partial_sort(top.begin(), top.begin() + std::ptrdiff_t(keep), top.end(), key_lt);
  top.resize(keep);
}

std::string where_cpu(int threads) { return threads > 1 ? fmt::format("cpu x{}", threads) : "cpu"; }

// x combined with v by concurrent threads. Sums: two 64-bit atomic adds (the carry of the low
// word's add goes into the high word), exact once the batch's threads have joined.
void atomic_combine(int kind, Acc& x, Acc v) {
  std::atomic_ref<std::uint64_t> lo(x.lo);
  if (is_sum(kind)) {
    const std::uint64_t old = lo.fetch_add(v.lo, std::memory_order_relaxed);
    const std::int64_t carry = old + v.lo < old;
    if (v.hi + carry) std::atomic_ref<std::int64_t>(x.hi).fetch_add(v.hi + carry, std::memory_order_relaxed);
    return;
  }
  std::uint64_t cur = lo.load(std::memory_order_relaxed);
  while (acc_combine(kind, Acc{cur, 0}, v).lo != cur &&
         !lo.compare_exchange_weak(cur, v.lo, std::memory_order_relaxed)) {}
}

}  // namespace

namespace detail {
std::vector<float> list_max_abs(const Lists& l) {
  std::vector<float> out(l.n, 0.0f);
  if (l.m == 0) return out;
  for (std::uint32_t i = 0; i < l.n; ++i)
    out[i] = std::max(std::fabs(l.list(i).front().score), std::fabs(l.list(i).back().score));
  return out;
}

std::vector<std::uint64_t> list_top_runs(const Lists& l) {
  std::vector<std::uint64_t> out(l.n, 0);
  if (l.m == 0) return out;
  for (std::uint32_t i = 0; i < l.n; ++i) {
    const auto li = l.list(i);
    const float top = li.front().score;
    // Sorted descending: the run is the prefix not below the top (-0.0 and 0.0 are one score).
    out[i] = std::uint64_t(
        std::partition_point(li.begin(), li.end(), [&](const Entry& e) { return !(e.score < top); }) - li.begin());
  }
  return out;
}

std::uint64_t nra_least_depth(const AggSpec& a, const std::vector<std::uint64_t>& top_runs, std::uint64_t m) {
  std::uint64_t least = m;
  for (std::uint32_t i = 0; i < a.n && i < top_runs.size(); ++i)
    if (a.kind != kWsum || a.w[i] > 0) least = std::min(least, top_runs[i] + 1);
  return std::min(least, m);
}

std::uint64_t shallow_first_depth(const AggSpec& a, const std::vector<std::uint64_t>& top_runs, std::uint64_t m,
                                  std::uint64_t k, std::uint64_t floor) {
  const std::uint64_t least = nra_least_depth(a, top_runs, m);
  std::uint64_t most = least;
  for (std::uint32_t i = 0; i < a.n && i < top_runs.size(); ++i)
    if (a.kind != kWsum || a.w[i] > 0) most = std::max(most, std::min(m, top_runs[i] + 1));
  // One list: the k-th's own level still reads T = its score, so k levels never stop.
  const std::uint64_t past_k = a.n == 1 ? k + 1 : k;
  return std::min(m, std::max({floor, past_k, most <= 2 * least ? most : least}));
}

int sum_scale(const AggSpec& a, const std::vector<float>& max_abs) {
  double most = 0;
  for (std::uint32_t i = 0; i < a.n && i < max_abs.size(); ++i) {
    const double c = std::fabs(agg_value(a, i, max_abs[i]));
    if (!std::isfinite(c))
      throw InputError(
          fmt::format("weight {} of list {} times its score {} overflows a double", a.w[i], i, max_abs[i]));
    most = std::max(most, c);
  }
  if (most == 0) return 0;
  int e = 0;
  std::frexp(most, &e);  // most < 2^e
  return e - 120;
}

double approx_error(const AggSpec& a, const std::vector<float>& max_abs) {
  if (!is_sum(a.kind)) return 0.0;  // a float min or max is the exact score
  double b = 0;                     // bound on every partial sum's magnitude
  for (std::uint32_t i = 0; i < a.n && i < max_abs.size(); ++i) b += std::fabs(agg_value(a, i, max_abs[i]));
  const double n = a.n;
  if (!(b * (1 + 0x1p-20) < double(std::numeric_limits<float>::max()) / 2)) return HUGE_VAL;
  // float: each contribution rounded once (2^-24 relative, 2^-150 absolute below the normals),
  // each of n - 1 additions 2^-24 of a partial sum; exact: each contribution rounded to the 2^scale
  // grid (half a unit), the sum rounded once to a double (2^-53). Generous constants on top.
  return n * 0x1p-24 * b * (1 + 0x1p-20) + n * std::ldexp(1.0, a.scale) + 0x1p-52 * b + n * 0x1p-149;
}

std::uint64_t nra_first_depth(std::uint64_t m, std::uint32_t n, std::uint64_t k, std::uint64_t floor) {
  if (m == 0) return 0;
  const double expected = double(m) * std::pow(double(std::min(k, m)) / double(m), 1.0 / double(std::max(n, 1u)));
  const auto d = static_cast<std::uint64_t>(std::ceil(expected));
  return std::min(m, std::max(floor, d));
}

void describe(Result& r, std::uint64_t m) {
  const auto& s = r.stats;
  // Set in place: an initializer list and a copy into the details took 2 us, more than the
  // GPU's one-launch NRA spends on some of its phases.
  nlohmann::json& d = r.report.details()["topk"];
  d["algo"] = s.algo;
  d["where"] = s.where;
  d["depth"] = s.depth;
  d["candidates"] = s.candidates;
  d["rounds"] = s.rounds;
  d["stride"] = s.stride;
  d["adaptive"] = s.adaptive;
  d["finished"] = s.finished;
  d["depth_fraction"] = m ? s.mean_depth() / double(m) : 0.0;
  std::string depth;
  for (std::size_t i = 0; i < s.depth.size() && i < 8; ++i) depth += fmt::format("{}{}", i ? ", " : "", s.depth[i]);
  if (s.depth.size() > 8) depth += ", ...";
  r.report.note(fmt::format("{} on {}: depth per list [{}] = {:.3f}% of {} objects; candidates {}; rounds {}{}{}",
                            s.algo, s.where, depth, m ? 100.0 * s.mean_depth() / double(m) : 0.0, m, s.candidates,
                            s.rounds,
                            s.stride ? fmt::format("; stride {}{}", s.stride, s.adaptive ? " (adaptive)" : "") : "",
                            s.finished ? "" : "; stopped at the depth cap without an answer"));
}
}  // namespace detail

std::vector<Item> reference(const Lists& l, std::uint64_t k, const Aggregate& agg) {
  const auto a = spec_of(agg, l);
  std::vector<Acc> acc(l.m, acc_identity(a.kind));
  for (std::uint32_t i = 0; i < l.n; ++i)
    for (const Entry& e : l.list(i)) acc[e.id] = acc_combine(a.kind, acc[e.id], acc_of(a, i, e.score));
  std::vector<Item> all(l.m);
  for (std::uint64_t id = 0; id < l.m; ++id) all[id] = Item{std::uint32_t(id), acc_score(a, acc[id]) + 0.0};
  k = std::min<std::uint64_t>(k, l.m);
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(k), all.end(), better);
  all.resize(k);
  return all;
}

Result scan_cpu(const Lists& l, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  const auto a = spec_of(agg, l);
  const int threads = threads_of(opts);
  Result r;
  r.report.operation = "topk";
  const auto m = static_cast<std::int64_t>(l.m);
  Stopwatch w;
  std::vector<Acc> acc(l.m);
  // Ids are distinct within a list, so a list's entries update distinct objects: no atomics.
  for (std::uint32_t i = 0; i < l.n; ++i) {
    const Entry* L = l.entries.data() + std::size_t(i) * l.m;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t p = 0; p < m; ++p) {
      const Entry e = L[p];
      const Acc v = acc_of(a, i, e.score);
      acc[e.id] = i == 0 ? v : acc_combine(a.kind, acc[e.id], v);
    }
  }
  r.report.add("aggregate every object", where_cpu(threads), w.seconds(),
               fmt::format("{} lists x {} objects", l.n, l.m));
  w.reset();
  std::vector<std::vector<Key96>> part(threads);
  parallel_region(threads, [&](int t, int T) {  // a heap that cannot grow: the exception leaves after the region
    auto& heap = part[t];                       // max-heap by key_lt: the worst kept key on top
    for (std::int64_t id = m * t / T; id < m * (t + 1) / T; ++id)
      push_bounded(heap, make_key(acc_score(a, acc[id]), std::uint32_t(id)), k, key_lt);
  });
  std::vector<Key96> top;
  for (auto& p : part) merge_top(top, p, k);
  r.report.add("select top k", where_cpu(threads), w.seconds(), fmt::format("k = {}", k));
  r.items = items_of(top);
  finish(r, "scan", where_cpu(threads), l.n, l.m, l.m, 0, 1, false, true);
  return r;
}

Result nra_cpu(const Lists& l, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  const auto a = spec_of(agg, l);
  const int threads = threads_of(opts);
  const std::uint32_t n = l.n;
  const std::uint64_t m = l.m;
  const std::uint64_t full = full_mask(n);
  Result r;
  r.report.operation = "topk";
  Stopwatch w;
  std::vector<Slot> slot(m, Slot{acc_identity(a.kind), 0});
  r.report.add("NRA init", where_cpu(threads), w.seconds(), fmt::format("{} object slots", m));

  std::vector<std::uint32_t> cand, completed;
  std::vector<Key96> top, entrants;
  std::vector<std::vector<std::uint32_t>> tcand(threads), tdone(threads);
  Acc tval[kMaxLists];
  bool phase2 = false, done = false;
  const bool adaptive = opts.stride == 0;
  const std::uint64_t floor = threads > 1 ? 4096 : 256;
  std::uint64_t stride = adaptive ? first_stride(k, floor) : opts.stride;
  std::uint64_t d = 0, rounds = 0, peak = 0, rounds1 = 0;
  double t1 = 0, t2 = 0;
  r.stats.stride = stride;
  while (!done) {
    if (opts.max_depth && d >= opts.max_depth) break;
    std::uint64_t e = std::min(m, d + stride);
    if (opts.max_depth) e = std::min(e, std::max(opts.max_depth, d + 1));
    w.reset();
    completed.clear();
    const bool in_phase2 = phase2;
    if (threads == 1) {
      for (std::uint64_t p = d; p < e; ++p)
        for (std::uint32_t i = 0; i < n; ++i) {
          const Entry x = l.entries[std::size_t(i) * m + p];
          Slot& s = slot[x.id];
          if (s.mask == 0) {
            if (in_phase2) continue;  // phase 2: objects never seen cannot enter the top k
            cand.push_back(x.id);
          }
          s.acc = acc_combine(a.kind, s.acc, acc_of(a, i, x.score));
          s.mask |= std::uint64_t{1} << i;
          if (s.mask == full) completed.push_back(x.id);
        }
    } else {
      const auto width = static_cast<std::int64_t>(e - d);
      const std::int64_t total = width * n;
      parallel_region(threads, [&](int t, int T) {
        auto& mc = tcand[t];
        auto& md = tdone[t];
        mc.clear();
        md.clear();
        for (std::int64_t q = total * t / T; q < total * (t + 1) / T; ++q) {
          const auto i = static_cast<std::uint32_t>(q / width);
          const std::uint64_t p = d + std::uint64_t(q % width);
          const Entry x = l.entries[std::size_t(i) * m + p];
          Slot& s = slot[x.id];
          std::atomic_ref<std::uint64_t> mask(s.mask);
          if (in_phase2 && mask.load(std::memory_order_relaxed) == 0) continue;
          atomic_combine(a.kind, s.acc, acc_of(a, i, x.score));
          const std::uint64_t bit = std::uint64_t{1} << i;
          const std::uint64_t old = mask.fetch_or(bit, std::memory_order_acq_rel);
          if (old == 0) mc.push_back(x.id);
          if ((old | bit) == full) md.push_back(x.id);
        }
      });
      for (int t = 0; t < threads; ++t) {
        cand.insert(cand.end(), tcand[t].begin(), tcand[t].end());
        completed.insert(completed.end(), tdone[t].begin(), tdone[t].end());
      }
    }
    for (std::uint32_t i = 0; i < n; ++i) tval[i] = acc_of(a, i, l.entries[std::size_t(i) * m + e - 1].score);
    // Fully known objects that beat the current k-th enter the running top k (the paper's tmp).
    entrants.clear();
    for (std::uint32_t id : completed) {
      const Key96 key = make_key(acc_score(a, slot[id].acc), id);
      if (top.size() < k || key_less(key, top.back())) entrants.push_back(key);
    }
    merge_top(top, entrants, k);
    d = e;
    ++rounds;
    if (d == m) {
      done = true;  // every object seen in every list: top holds the exact answer
    } else if (top.size() == k) {
      const Key96 kth = top[k - 1];
      Acc tagg = acc_identity(a.kind);
      for (std::uint32_t i = 0; i < n; ++i) tagg = acc_combine(a.kind, tagg, tval[i]);
      if (!phase2 && !unseen_may_beat(acc_score(a, tagg), kth)) phase2 = true;
      if (phase2) {
        // Drop fully known objects and those whose upper bound cannot beat the k-th any more
        // (bounds only fall, the k-th only rises: they never come back).
        std::size_t out = 0;
        for (std::uint32_t id : cand) {
          const Slot& s = slot[id];
          if (s.mask != full && may_beat(acc_score(a, upper_bound(a.kind, s.acc, s.mask, full, tval)), id, kth))
            cand[out++] = id;
        }
        cand.resize(out);
        done = cand.empty();
      }
    }
    peak = std::max<std::uint64_t>(peak, cand.size());
    (in_phase2 ? t2 : t1) += w.seconds();
    rounds1 += !in_phase2;
    if (adaptive) stride = next_stride(stride, d, phase2, floor);
  }
  r.report.add("NRA phase 1 (collect candidates)", where_cpu(threads), t1, fmt::format("{} rounds", rounds1));
  r.report.add("NRA phase 2 (upper bounds only)", where_cpu(threads), t2, fmt::format("{} rounds", rounds - rounds1));
  if (done) r.items = items_of(top);
  finish(r, "nra", where_cpu(threads), n, m, d, peak, rounds, adaptive, done);
  return r;
}

TaIndex build_ta_index(const Lists& l, int threads) {
  if (threads <= 0) threads = default_threads();
  TaIndex ix;
  ix.m = l.m;
  ix.score_by_id.resize(std::size_t(l.n) * l.m);
  const auto total = static_cast<std::int64_t>(std::size_t(l.n) * l.m);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t q = 0; q < total; ++q) {
    const auto i = std::uint64_t(q) / l.m;
    ix.score_by_id[i * l.m + l.entries[q].id] = l.entries[q].score;
  }
  return ix;
}

Result ta_cpu(const Lists& l, std::uint64_t k, const Aggregate& agg, const Options& opts, const TaIndex* index) {
  const auto a = spec_of(agg, l);
  const std::uint32_t n = l.n;
  const std::uint64_t m = l.m;
  Result r;
  r.report.operation = "topk";
  Stopwatch w;
  TaIndex own;
  if (!index || index->m != m || index->score_by_id.size() != std::size_t(n) * m) {
    own = build_ta_index(l, opts.threads);
    index = &own;
    r.report.add("TA index build (id -> score per list)", where_cpu(threads_of(opts)), w.seconds(),
                 human_bytes(own.score_by_id.size() * sizeof(float)));
  }
  w.reset();
  const float* ix = index->score_by_id.data();
  std::vector<std::uint64_t> seen((m + 63) / 64, 0);
  std::vector<Key96> heap;  // max-heap by key_lt: the k-th best on top
  std::uint64_t p = 0, scored = 0;
  bool done = false;
  const std::uint64_t limit = opts.max_depth ? std::min(m, opts.max_depth) : m;
  for (; p < limit && !done; ++p) {
    Acc tagg = acc_identity(a.kind);
    for (std::uint32_t i = 0; i < n; ++i) {
      const Entry x = l.entries[std::size_t(i) * m + p];
      tagg = acc_combine(a.kind, tagg, acc_of(a, i, x.score));
      std::uint64_t& sw = seen[x.id / 64];
      const std::uint64_t bit = std::uint64_t{1} << (x.id % 64);
      if (sw & bit) continue;
      sw |= bit;
      ++scored;
      Acc s = acc_identity(a.kind);
      for (std::uint32_t j = 0; j < n; ++j) s = acc_combine(a.kind, s, acc_of(a, j, ix[std::size_t(j) * m + x.id]));
      push_bounded(heap, make_key(acc_score(a, s), x.id), k, key_lt);
    }
    // Every object not read yet scores at most tagg; with an unknown id it must fall strictly below.
    if (p + 1 == m || (heap.size() == k && !unseen_may_beat(acc_score(a, tagg), heap.front()))) done = true;
  }
  std::sort(heap.begin(), heap.end(), key_lt);
  r.report.add("TA sorted + random access", "cpu", w.seconds(), fmt::format("{} objects scored", scored));
  r.stats.stride = 1;
  if (done) r.items = items_of(heap);
  finish(r, "ta", "cpu", n, m, p, scored, p, false, done);
  return r;
}

Estimate estimate_overlap(const Lists& l) {
  Estimate est;
  if (l.n < 2 || l.m == 0) return est;
  const double pairs = double(l.n) * (l.n - 1) / 2;
  // Prefix long enough that independent lists would share about 64 (object, pair) hits.
  const double want = std::sqrt(64.0 * double(l.m) / pairs);
  est.prefix = std::min<std::uint64_t>(l.m, std::max<std::uint64_t>(64, std::uint64_t(std::ceil(want))));
  std::vector<std::uint32_t> ids;
  ids.reserve(std::size_t(l.n) * est.prefix);
  for (std::uint32_t i = 0; i < l.n; ++i)
    for (std::uint64_t p = 0; p < est.prefix; ++p) ids.push_back(l.entries[std::size_t(i) * l.m + p].id);
  std::sort(ids.begin(), ids.end());
  for (std::size_t b = 0; b < ids.size();) {
    std::size_t e = b;
    while (e < ids.size() && ids[e] == ids[b]) ++e;
    const double c = double(e - b);
    est.observed += c * (c - 1) / 2;
    b = e;
  }
  const double q = double(est.prefix) / double(l.m);
  est.expected = pairs * q * q * double(l.m);
  return est;
}

}  // namespace tandem::topk
