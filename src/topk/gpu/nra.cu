// Which NRA path answers on the GPU, and each path's host side: one launch, float partials, exact rounds.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "topk/gpu/lists.cuh"
#include "topk/gpu/nra_kernels.cuh"

namespace tandem::topk {

using namespace detail;

// NRA on exact partial aggregates (24-byte slots), in rounds of `stride` levels read in every
// list: phase 1 until k fully known objects beat every unseen one, phase 2 pruning by upper bound.
static void nra_exact(Query& q, std::uint64_t k, const Options& opts) {
  auto& [d, n, m, a, where, r] = q;
  const unsigned long long full = full_mask(n);
  Stopwatch w;
  prepare_common(d, k);
  d.prepare_slots(acc_identity(a.kind));
  d.stream.sync();
  r.report.add("NRA init", where, w.seconds(), "state + buffers");

  TopK top{d, k};
  const bool adaptive = opts.stride == 0;
  const std::uint64_t floor = 4096;
  std::uint64_t stride = adaptive ? first_stride(k, floor) : opts.stride;
  r.stats.stride = stride;
  std::uint64_t dpt = 0, rounds = 0, rounds1 = 0, peak = 0, cands = 0, touched = 0;
  bool phase2 = false, done = false, pruned_once = false;
  double t1 = 0, t2 = 0;
  while (!done) {
    if (opts.max_depth && dpt >= opts.max_depth) break;
    std::uint64_t e = std::min(m, dpt + stride);
    if (opts.max_depth) e = std::min(e, std::max(opts.max_depth, dpt + 1));
    const std::uint64_t width = e - dpt;
    const bool in_phase2 = phase2;
    w.reset();
    TANDEM_CUDA(cudaMemsetAsync(&d.state.data()->completed, 0, 2 * sizeof(unsigned long long), d.stream));
    k_nra_scatter<<<gpu::grid_for(width * n, kBlock, kGridCap), kBlock, 0, d.stream>>>(
        d.L, m, n, dpt, width, a, d.slots.data(), full, in_phase2, d.touched.data(), d.completed.data(),
        d.state.data());
    TANDEM_CUDA_LAUNCH("k_nra_scatter");
    k_nra_entrants<<<gpu::grid_for(std::min(m, width * n), kBlock, kGridCap), kBlock, 0, d.stream>>>(
        d.completed.data(), d.slots.data(), a.kind, a.scale, d.state.data(), d.merge_a.data() + top.top);
    TANDEM_CUDA_LAUNCH("k_nra_entrants");
    d.fetch_state();
    const DevState st = d.host_state[0];
    touched = st.touched;
    top.merge(st.entrants);
    dpt = e;
    ++rounds;
    if (dpt == m) {
      done = true;
    } else if (top.full) {
      if (!phase2 && !unseen_may_beat(t_agg(a, st.thr), top.kth)) phase2 = true;
      if (phase2) {
        const std::uint32_t* in = pruned_once ? d.cand_a.data() : d.touched.data();
        const std::uint64_t count = pruned_once ? cands : touched;
        TANDEM_CUDA(cudaMemsetAsync(&d.state.data()->remaining, 0, sizeof(unsigned long long), d.stream));
        if (count) {
          k_nra_prune<<<gpu::grid_for(count, kBlock, kGridCap), kBlock, 0, d.stream>>>(
              in, count, d.slots.data(), a, full, d.state.data(), d.cand_b.data());
          TANDEM_CUDA_LAUNCH("k_nra_prune");
        }
        d.fetch_state();
        cands = d.host_state[0].remaining;
        std::swap(d.cand_a, d.cand_b);
        pruned_once = true;
        done = cands == 0;
      }
    }
    peak = std::max(peak, pruned_once ? cands : touched);
    (in_phase2 ? t2 : t1) += w.seconds();
    rounds1 += !in_phase2;
    if (adaptive) stride = next_stride(stride, dpt, phase2, floor);
  }
  w.reset();
  if (done) r.items = top.items();
  d.reset_touched(touched);
  d.stream.sync();
  r.report.add("NRA phase 1 (collect candidates)", where, t1, gpu::format("{} rounds", rounds1));
  r.report.add("NRA phase 2 (upper bounds only)", where, t2, gpu::format("{} rounds", rounds - rounds1));
  r.report.add("results D2H + state reset", where, w.seconds(), gpu::format("{} objects touched", touched));
  finish(r, "nra", where, n, m, dpt, peak, rounds, adaptive, done);
}

// The float NRA's probes: how deep they read, the k-th complete object's float aggregate, and
// their counts and times for the report.
struct FloatProbes {
  std::uint64_t depth{0}, probes{0}, completed{0}, open_passes{0}, many{0};
  float kth{0};
  double t_scatter{0}, t_tests{0};
};

// The float NRA's first stage: list prefixes into the packed words, probed deeper until k complete
// objects beat, by more than `error`, every object seen nowhere and every upper bound of the
// objects seen in some lists.
static FloatProbes float_probes(Query& q, std::uint64_t k, double error) {
  auto& [d, n, m, a, where, r] = q;
  gpu::Event p0, p1, p2;
  FloatProbes f;
  prepare_common(d, k);
  ensure(d.nra_words, m);
  TANDEM_CUDA(cudaMemsetAsync(d.nra_words.data(), 0, m * sizeof(std::uint32_t), d.stream));
  const auto full = static_cast<std::uint32_t>(full_mask(n));
  DevState* dst = d.state.data();
  auto open_pass = [&] {
    k_fnra_open<<<gpu::grid_for(m, kBlock, 132 * 8), kBlock, 0, d.stream>>>(d.nra_words.data(), m, full, a, error, dst);
    TANDEM_CUDA_LAUNCH("k_fnra_open");
  };
  // One probe: read the lists down to `next`, select the k-th complete object and run the stop
  // tests on the device, then one read back; true when the answer is known.
  auto probe = [&](std::uint64_t next) {
    const std::uint64_t width = next - f.depth;
    TANDEM_CUDA(cudaMemsetAsync(&dst->open, 0, sizeof(unsigned long long) + 2 * sizeof(std::uint32_t), d.stream));
    p0.record(d.stream);
    k_fnra_scatter<<<gpu::grid_for(width * n, kBlock, kGridCap), kBlock, 0, d.stream>>>(
        d.L, m, n, f.depth, width, a, d.nra_words.data(), full, d.completed.data(), dst);
    TANDEM_CUDA_LAUNCH("k_fnra_scatter");
    p1.record(d.stream);
    k_fnra_block_select<<<1, kBlockSelectThreads, 0, d.stream>>>(d.completed.data(), d.nra_words.data(), n, k, dst);
    TANDEM_CUDA_LAUNCH("k_fnra_block_select");
    open_pass();
    p2.record(d.stream);
    d.fetch_state();
    f.depth = next;
    ++f.probes;
    DevState st = d.host_state[0];
    if (st.kth_state == 2) {  // too many complete objects for one block: the device-wide select
      ++f.many;
      ensure(d.approx, st.completed);
      k_fnra_gather<<<gpu::grid_for(st.completed, kBlock, kGridCap), kBlock, 0, d.stream>>>(
          d.completed.data(), st.completed, d.nra_words.data(), n, d.approx.data());
      TANDEM_CUDA_LAUNCH("k_fnra_gather");
      radix_select(d, d.approx.data(), st.completed, k);
      k_fnra_take_select<<<1, 1, 0, d.stream>>>(d.select.data(), dst);
      TANDEM_CUDA_LAUNCH("k_fnra_take_select");
      open_pass();
      p2.record(d.stream);
      d.fetch_state();
      st = d.host_state[0];
    }
    f.t_scatter += p1.seconds_since(p0);
    f.t_tests += p2.seconds_since(p1);
    f.completed = st.completed;
    if (st.kth_state != 1) {
      if (f.depth == m)
        throw Error(
            gpu::format("top-k NRA: {} objects complete at full depth, k = {} (internal error)", f.completed, k));
      return false;
    }
    f.kth = key32_score(st.kth_key);
    if (f.depth == m) return true;                                         // every object is complete
    if (!(t_agg(a, st.thr) < approx_cut(f.kth, error / 2))) return false;  // an unseen object may beat the k-th
    ++f.open_passes;
    return st.open == 0;
  };
  for (std::uint64_t next = nra_first_depth(m, n, k, 4096); !probe(next);)
    next = nra_next_depth(f.depth, m, f.completed, k);
  return f;
}

// The float NRA's second stage: the candidates within twice the error bound of the k-th float get
// their exact aggregates by reading the probed prefixes again, and the k best of them answer. False,
// with a note, when too many objects are that near the k-th. `e0`: the query's start.
static bool float_exact(Query& q, std::uint64_t k, double error, const FloatProbes& f, gpu::Event& e0) {
  auto& [d, n, m, a, where, r] = q;
  gpu::Event e1, e2;
  e1.record(d.stream);
  const float cut = approx_cut(f.kth, error);
  const std::uint64_t cap = std::min(m, std::max<std::uint64_t>(16 * k, 1 << 16));
  ensure(d.cand_ids, cap);
  ensure(d.cand_bits, m / 32 + 1);
  TANDEM_CUDA(cudaMemsetAsync(d.cand_bits.data(), 0, (m / 32 + 1) * sizeof(std::uint32_t), d.stream));
  TANDEM_CUDA(cudaMemsetAsync(d.select.data(), 0, sizeof(SelectState), d.stream));  // the count, and no stale `lost`
  k_fnra_candidates<<<gpu::grid_for(f.completed, kBlock, kGridCap), kBlock, 0, d.stream>>>(
      d.completed.data(), f.completed, d.nra_words.data(), n, cut, d.cand_ids.data(), cap, &d.select.data()->count,
      d.cand_bits.data());
  TANDEM_CUDA_LAUNCH("k_fnra_candidates");
  const unsigned long long count = read_select(d).count;
  if (count > cap) {
    e2.record(d.stream);
    e2.sync();
    r.report.add("NRA probes (float partial aggregates, not used)", where, e2.seconds_since(e0),
                 gpu::format("{} probes, {} levels of each list, {} candidates", f.probes, f.depth, count));
    r.report.note(gpu::format(
        "nra: {} objects within the float error bound of the k-th (more than {}); exact partial aggregates used", count,
        cap));
    return false;
  }
  if (count < k) throw Error(gpu::format("top-k NRA: {} candidates for k = {} (internal error)", count, k));
  const Acc ident = acc_identity(a.kind);
  d.prepare_slots(ident);
  k_fnra_exact<<<gpu::grid_for(f.depth * n, kBlock, kGridCap), kBlock, 0, d.stream>>>(
      d.L, m, n, f.depth, a, d.cand_bits.data(), d.slots.data());
  TANDEM_CUDA_LAUNCH("k_fnra_exact");
  k_fnra_keys<<<gpu::grid_for(count, kBlock, kGridCap), kBlock, 0, d.stream>>>(d.cand_ids.data(), count, d.slots.data(),
                                                                               a, ident, d.merge_a.data());
  TANDEM_CUDA_LAUNCH("k_fnra_keys");
  d.slots_clean = true;  // the keys kernel put back every slot the exact pass touched
  r.items = best_keys(d, count, k);
  e2.record(d.stream);
  e2.sync();
  const double t_probes = e1.seconds_since(e0);
  r.report.add("NRA state clear + first set-up", where, t_probes - f.t_scatter - f.t_tests,
               human_bytes(m * sizeof(std::uint32_t)));
  r.report.add("NRA probes: list prefixes into float partial aggregates", where, f.t_scatter,
               gpu::format("{} probes, {} levels of each list, {} objects complete", f.probes, f.depth, f.completed));
  r.report.add("NRA probes: select the k-th complete + stop tests", where, f.t_tests,
               gpu::format("{} upper-bound passes over the objects; {} device-wide selects", f.open_passes, f.many));
  r.report.add("NRA candidates' exact aggregates (prefixes read again) + sort", where, e2.seconds_since(e1),
               gpu::format("{} candidates within {} of the k-th", count, 2 * error));
  finish(r, "nra", where, n, m, f.depth, count, f.probes, true, true);
  return true;
}

// NRA on float partial aggregates, for sums and weighted sums over at most 8 lists that are not
// correlated: one 32-bit word per object (lists seen, float partial: packed_add), list prefixes
// read to depths probed 1.5x deeper each time until k objects seen everywhere beat, by more than the float's error
// bound, every object seen nowhere (the aggregate of the last scores read) and every upper bound of the objects seen in
// some lists; then the candidates within twice the bound of the k-th float get their exact
// aggregates by reading the same prefixes again (sorted access only). False, with a note when the
// float cannot decide, and the exact NRA answers.
static bool nra_float(Query& q, std::uint64_t k) {
  auto& [d, n, m, a, where, r] = q;
  if (!is_sum(a.kind) || n > kPackedMaxLists) return false;
  // Twice the packed partials' bound: the upper bounds also add n doubles.
  const double error = 2 * packed_error(approx_error(a, d.max_abs), n);
  if (!std::isfinite(error)) {
    r.report.note("nra: float partial aggregates could overflow; exact partial aggregates used");
    return false;
  }
  gpu::Event e0;
  e0.record(d.stream);
  const FloatProbes f = float_probes(q, k, error);
  return float_exact(q, k, error, f, e0);
}

// ---- NRA in one launch, the host side: whether the kernel (nra_one_launch.cu) runs, its buffers' sizes, its
// launch, and its status read into a result.

// What NRA in one launch did: answered, not run (see nra_shallow), or gave up (a note in the report).
enum class Shallow { answered, not_run, gave_up };

namespace {

// The launch's shape: g blocks, each holding `range` table entries (in shared memory when
// in_shared: table_bytes of it), an inbox of `box` entries each, and the per-block numbers' rows.
struct ShallowShape {
  std::size_t g;
  std::uint64_t range;
  std::size_t table_bytes;
  bool in_shared;
  std::uint64_t box;
  std::size_t row, at;
};

// Sizes every buffer the kernel uses for g blocks, `entries` table entries and a depth budget;
// buffers that are new (or a launch that failed) get their counts and flags zeroed.
ShallowShape prepare_shallow(DeviceLists::Impl& d, int blocks, std::uint32_t n, std::uint64_t entries,
                             std::uint64_t budget) {
  const auto g = std::size_t(blocks);
  const std::uint64_t range = (entries + g - 1) / g;  // each block's part of the table
  const std::size_t table_bytes = range * (1 + n) * sizeof(std::uint32_t);
  const bool in_shared = table_bytes <= d.shallow_shared;
  if (in_shared && table_bytes > d.shallow_allowed) {
    gpu::allow_dynamic_shared(nra_one_launch_kernel(), table_bytes);
    d.shallow_allowed = table_bytes;
  }
  if (!in_shared) ensure(d.shallow_table, g * range * (1 + n));
  // A round sends at most n x budget entries, spread evenly over the blocks by the hash: twice
  // that share, and room for small rounds.
  const std::uint64_t box = 2 * ((std::uint64_t(n) * budget + g - 1) / g) + 1024;
  ensure(d.shallow_inbox, g * box);
  if (d.shallow_sent.size() < g) {
    ensure(d.shallow_sent, g);
    d.shallow_dirty = true;
  }
  if (d.host_shallow.size() < 2 + kShallowRankMax) {
    d.host_shallow = gpu::PinnedBuffer<Key96>();
    d.host_shallow = gpu::PinnedBuffer<Key96>(2 + kShallowRankMax);
    void* dev = nullptr;
    TANDEM_CUDA(cudaHostGetDevicePointer(&dev, d.host_shallow.data(), 0));
    d.host_shallow_dev = static_cast<Key96*>(dev);
  }
  if (d.shallow_flags.size() < 2) {
    d.shallow_flags = gpu::DeviceBuffer<ShallowFlags>(2);
    d.shallow_dirty = true;
  }
  if (d.shallow_dirty) {
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_sent.data(), 0, d.shallow_sent.bytes(), d.stream));
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_flags.data(), 0, d.shallow_flags.bytes(), d.stream));
    d.shallow_parity = 0;
  }
  ensure(d.shallow_comp, g * range);
  ensure(d.shallow_min, g);
  ensure(d.merge_a, g * range);
  ensure(d.merge_b, g * range);
  const std::size_t row = (g + 3) / 4 * 4, at = (5 * g + 3) / 4 * 4;
  if (d.shallow_numbers.size() < at + kShallowSamples * row) {
    ensure(d.shallow_numbers, at + kShallowSamples * row);
    // The rows' padding past the last block stays zero.
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_numbers.data(), 0, d.shallow_numbers.bytes(), d.stream));
  }
  return ShallowShape{g, range, table_bytes, in_shared, box, row, at};
}

// The kernel's arguments over the buffers prepare_shallow sized.
ShallowArgs shallow_args(const Query& q, const ShallowShape& sh, std::uint64_t k, std::uint64_t first,
                         std::uint64_t budget) {
  auto& d = q.d;
  const std::size_t g = sh.g, at = sh.at;
  unsigned* numbers = d.shallow_numbers.data();
  ShallowFlags* flags = d.shallow_flags.data();
  return ShallowArgs{d.L,
                     q.m,
                     q.n,
                     q.a,
                     unit_inverse(q.a.scale),
                     sh.range,
                     sh.in_shared ? nullptr : d.shallow_table.data(),
                     d.shallow_inbox.data(),
                     sh.box,
                     d.shallow_sent.data(),
                     k,
                     first,
                     budget,
                     kShallowFloor,
                     d.shallow_comp.data(),
                     d.merge_b.data(),
                     d.merge_a.data(),
                     d.shallow_min.data(),
                     BlockNumbers{numbers, numbers + g, numbers + 2 * g, numbers + 3 * g, numbers + 4 * g, numbers + at,
                                  unsigned(sh.row)},
                     flags + d.shallow_parity,
                     flags + (1 - d.shallow_parity),
                     d.host_shallow_dev};
}

// Launches the cooperative grid and polls the status it writes into pinned memory (cheaper than a
// copy back and a stream synchronisation).
ShallowStatus launch_shallow(DeviceLists::Impl& d, const ShallowArgs& args, int blocks, const ShallowShape& sh) {
  void* params[] = {const_cast<ShallowArgs*>(&args)};
  d.shallow_dirty = true;  // until the kernel has answered
  auto* status = reinterpret_cast<volatile unsigned*>(d.host_shallow.data());
  TANDEM_CUDA(cudaLaunchCooperativeKernel(nra_one_launch_kernel(), dim3(unsigned(blocks)), dim3(kShallowThreads),
                                          params, sh.in_shared ? sh.table_bytes : 0, d.stream));
  // The status is the kernel's last write; a kernel that ends without one failed.
  for (unsigned spin = 1; *status == 0; ++spin) {
    if (spin % 256) continue;
    const cudaError_t e = cudaStreamQuery(d.stream);
    if (e == cudaErrorNotReady || *status != 0) continue;
    TANDEM_CUDA(e);
    throw Error("top-k NRA in one launch: the kernel ended without a status (internal error)");
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  ShallowStatus st;
  std::memcpy(&st, d.host_shallow.data(), sizeof st);
  d.shallow_parity = 1 - d.shallow_parity;
  d.shallow_dirty = false;
  return st;
}

// The kernel's status into q.r: the answer (from pinned memory, or sorted from merge_a), or a note
// that it gave up.
Shallow shallow_result(Query& q, std::uint64_t k, const ShallowStatus& st, std::uint64_t table, std::uint64_t budget,
                       double seconds) {
  auto& [d, n, m, a, where, r] = q;
  if (st.state == kShallowGaveUp) {
    r.report.add("NRA in one launch (gave up)", where, seconds,
                 gpu::format("{} rounds, {} levels of each list", st.rounds, st.depth));
    r.report.note(st.cap ? gpu::format("nra: NRA in one launch did not stop before its table of {} objects filled "
                                       "up (the stop is deeper); the other NRA paths answer",
                                       table)
                         : gpu::format("nra: NRA in one launch did not stop within its budget of {} levels (the stop "
                                       "is deeper); the other NRA paths answer",
                                       budget));
    return Shallow::gave_up;
  }
  if (st.state == kShallowAnswer) {
    r.items.resize(k);
    const Key96* keys = d.host_shallow.data() + 2;
    for (std::uint64_t i = 0; i < k; ++i) r.items[i] = Item{keys[i].id, key_score(keys[i].hi)};
  } else if (st.state == kShallowHostSort) {
    r.items = best_keys(d, st.complete, k);  // every complete object's key is in merge_a
  } else {
    throw Error(gpu::format("top-k NRA in one launch: state {} (internal error)", st.state));
  }
  return Shallow::answered;
}

}  // namespace

// NRA in one launch (k_nra_shallow): the rounds, the stop test and the top k on the device; the
// host polls the status the kernel writes into pinned memory. not_run when the device has no
// cooperative launch, there are more lists than kShallowMaxLists, the table would be too large, or
// a depth cap (opts.max_depth) lies inside its budget; gave_up (a note in q.r) when NRA does not
// stop within the budget or the table fills up.
static Shallow nra_shallow(Query& q, std::uint64_t k, std::uint64_t max_depth) {
  auto& [d, n, m, a, where, r] = q;
  if (n > kShallowMaxLists) return Shallow::not_run;
  const std::uint64_t first = shallow_first_depth(a, d.top_run, m, k, kShallowFloor);
  const std::uint64_t budget = shallow_budget(m, first), entries = table_entries(n, first);
  if ((max_depth && max_depth < budget) || entries > kShallowMaxEntries) return Shallow::not_run;
  const int blocks = d.shallow_grid();
  if (blocks == 0) {
    r.report.note("nra: this GPU cannot launch a cooperative grid; NRA runs in host-driven rounds");
    return Shallow::not_run;
  }
  Stopwatch w;
  const ShallowShape sh = prepare_shallow(d, blocks, n, entries, budget);
  auto* status = reinterpret_cast<volatile unsigned*>(d.host_shallow.data());
  *status = 0;
  const ShallowArgs args = shallow_args(q, sh, k, first, budget);
  const ShallowStatus st = launch_shallow(d, args, blocks, sh);
  r.stats.stride = first;
  if (shallow_result(q, k, st, sh.g * sh.range, budget, w.seconds()) == Shallow::gave_up) return Shallow::gave_up;
  // std::to_string: this path's whole budget is tens of microseconds.
  r.report.add("NRA in one launch: rounds, stop tests and the top k on the device", where, w.seconds(),
               std::to_string(st.rounds) + " rounds, " + std::to_string(st.depth) + " levels of each list; " +
                   std::to_string(st.complete) + " complete objects, " +
                   (st.state == kShallowAnswer ? std::to_string(st.ranked) + " ranked in one block" : "sorted"));
  finish(r, "nra", where, n, m, st.depth, st.complete, std::uint64_t(st.rounds), true, true);
  return Shallow::answered;
}

Result nra_gpu(DeviceLists& dl, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  auto q = start_query(dl, k, agg);
  // Correlated lists (and a single list) stop within a few levels: NRA in one launch answers
  // without a host round trip per round (10M x 4 on an H100: 0.08 ms, the host-driven rounds 0.33
  // ms, the scan 0.39 ms). Elsewhere, or past its budget, the float NRA reads deep prefixes faster
  // than the exact NRA's rounds.
  const bool correlated = q.d.overlap.ratio() > kCorrelatedRatio;
  Shallow shallow = Shallow::not_run;
  if (opts.stride == 0 && (correlated || q.n == 1)) {
    shallow = nra_shallow(q, k, opts.max_depth);
    if (shallow == Shallow::answered) return std::move(q.r);
  }
  if (opts.stride == 0 && opts.max_depth == 0 && (!correlated || shallow == Shallow::gave_up) && nra_float(q, k))
    return std::move(q.r);
  nra_exact(q, k, opts);
  return std::move(q.r);
}

}  // namespace tandem::topk
