// The controller (performance control by measurement): profile a minority of the blocks under
// candidate schedules, run the majority remainder under the winner, cache the choice.
//
// Chunks are sub-rectangles ("pieces") shaped like the grid, cut left to right in strips from the
// top (PieceLayout); each piece is its own launch, ordered by the candidate rescaled to the piece.
// The sequence on one stream is
//
//   probe(I)  bridge(I)  | sync: size the chunks from the probe's time |
//   C1 I C2 I ... Ck I  bridge(I)  | sync: pick |  rest under the winner
//
// where I is the incumbent (the static choice when the caller has one). Every candidate is compared
// with the incumbent chunks on either side of it, so a drift along the grid or in time cancels to
// first order, and it replaces the incumbent only when it is faster by switch_margin. When the probe
// shows that chunks of a trustworthy length (min_chunk_seconds) do not fit the budget, profiling
// stops after that one chunk: it ran under the incumbent, so nothing is lost but a launch. Bridges
// (incumbent, unmeasured) keep the GPU busy while the host waits for events. Every block runs
// exactly once whatever the choice, so the result is the same.
#include "tandem/schedule/kernels.hpp"

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "tandem/device.hpp"
#include "tandem/error.hpp"
#include "tandem/tune.hpp"

#if TANDEM_HAS_CUDA
#include "tandem/gpu.hpp"
#endif

namespace tandem::schedule {

#if TANDEM_HAS_CUDA

namespace {

std::string device_key() {
  int dev = 0;
  TANDEM_CUDA(cudaGetDevice(&dev));
  const auto g = gpu_info();
  for (const auto& i : g)
    if (i.index == dev) return i.key();
  return fmt::format("gpu{}", dev);
}

}  // namespace

ControllerResult run_controlled(BandLauncher& k, const ControllerOptions& o) {
  gpu::require();
  const Grid g = k.grid();
  const cudaStream_t st = k.stream();
  TuningCache& cache = o.cache ? *o.cache : TuningCache::global();
  const std::string op = "schedule/" + k.name();
  const std::string cls = fmt::format("{}x{}", g.w, g.h);
  const std::string dev = device_key();
  ControllerResult r;
  r.report.operation = "schedule " + k.name();

  auto run_whole = [&](const Schedule& s, const std::string& source) {
    gpu::Event e0, e1;
    e0.record(st);
    k.launch_rect(s, {0, 0, g.w, g.h});
    e1.record(st);
    e1.sync();
    r.chosen = s;
    r.source = source;
    r.remainder_seconds = r.total_seconds = e1.seconds_since(e0);
    r.report.add("run " + to_string(s), "gpu", r.total_seconds, fmt::format("{} blocks, {}", g.count(), source));
    return r;
  };

  if (o.use_cache) {
    if (auto hit = cache.get(op, dev, cls); hit && hit->contains("schedule")) {
      try {
        const Schedule s = parse_schedule(hit->at("schedule").get<std::string>());
        if (fits(s, g)) {
          r.report.note(fmt::format("cached choice for {} on {} ({}): {}", k.name(), cls, dev, to_string(s)));
          return run_whole(s, "cache");
        }
      } catch (const std::exception&) {
        // A stale or foreign entry: profile again and overwrite it.
      }
    }
  }

  const std::uint32_t min_chunk = o.min_chunk_blocks ? o.min_chunk_blocks : 2 * default_window();
  const ProfilePlan plan = plan_profile(g, o, min_chunk);
  const Schedule inc = plan.candidates.front();
  r.incumbent = inc;
  if (!plan.why_not.empty()) {
    r.report.note("not profiled: " + plan.why_not + "; ran " + to_string(inc));
    return run_whole(inc, "not profiled: " + plan.why_not);
  }

  // Runs s on a sub-rectangle, rescaled to it (sequential where it does not fit: same blocks).
  auto run = [&](const Schedule& s, const BlockRect& rc) {
    Schedule a = rescale(s, g, rc.grid());
    if (!fits(a, rc.grid())) a = Schedule::sequential();
    k.launch_rect(a, rc);
  };
  PieceLayout layout(g, plan.piece_h);
  std::deque<gpu::Event> ev;  // start/end of each measured piece (deque: events do not move)
  auto record = [&] {
    ev.emplace_back();
    ev.back().record(st);
    return ev.size() - 1;
  };
  struct Span {
    std::size_t e0, e1;
  };
  std::vector<Span> spans;  // parallel to r.profile
  const std::size_t start = record();
  // A measured piece of w columns; strip ends skipped to make room run under the incumbent.
  auto measured = [&](const Schedule& s, std::uint32_t w, const char* role) {
    BlockRect pc;
    std::vector<BlockRect> skipped;
    if (!layout.take(w, pc, skipped)) return false;
    for (const auto& sk : skipped) run(inc, sk);
    const std::size_t a = record();
    run(s, pc);
    const std::size_t b = record();
    r.profile.push_back({s, pc, 0, 0, role, 0});
    spans.push_back({a, b});
    r.profiled_blocks += pc.count();
    return true;
  };
  // Unmeasured incumbent work that keeps the GPU busy while the host waits.
  auto bridge = [&](const Schedule& s, std::uint32_t w) {
    BlockRect pc;
    std::vector<BlockRect> skipped;
    if (!layout.take(w, pc, skipped)) return;
    for (const auto& sk : skipped) run(inc, sk);
    run(s, pc);
    r.report.add("bridge " + to_string(s), "gpu", 0,
                 fmt::format("blocks ({}, {}) {}x{}, run while the host waits (time inside the total)", pc.x0, pc.y0,
                             pc.w, pc.h));
  };
  auto collect = [&](std::size_t from) {
    ev[spans.back().e1].sync();
    for (std::size_t i = from; i < r.profile.size(); ++i) {
      r.profile[i].seconds = ev[spans[i].e1].seconds_since(ev[spans[i].e0]);
      r.profile[i].per_block = r.profile[i].seconds / double(r.profile[i].rect.count());
    }
  };
  // One round: candidate, incumbent, candidate, incumbent, ... then a bridge, then compare each
  // candidate with the same-width incumbent chunks measured just before and after it.
  Schedule chosen = inc;
  auto round = [&](const Schedule& holder, const std::vector<Schedule>& cands, std::uint32_t w, const char* role) {
    const std::size_t first = r.profile.size();
    for (const Schedule& c : cands) {
      if (!measured(c, w, role)) break;
      if (!measured(holder, w, "incumbent")) break;
    }
    if (r.profile.size() == first) return holder;
    bridge(holder, 2 * w);
    collect(first);
    std::size_t best = 0;
    double best_ratio = 1e300;
    for (std::size_t i = first; i < r.profile.size(); ++i) {
      if (r.profile[i].role != role) continue;
      double sum = 0;
      int n = 0;
      for (std::size_t j : {i - 1, i + 1}) {
        if (j >= r.profile.size() || j + 1 == 0) continue;
        const auto& p = r.profile[j];
        // Not the probe: the first launch of a kernel also pays for lazy module loading, a cold L2
        // and clocks ramping up.
        if (p.role != "probe" && p.schedule == holder && p.rect.count() == r.profile[i].rect.count())
          sum += p.seconds, ++n;
      }
      if (!n) continue;
      r.profile[i].ratio = r.profile[i].seconds / (sum / n);
      if (r.profile[i].ratio < best_ratio) best_ratio = r.profile[i].ratio, best = i;
    }
    if (best_ratio < 1.0 - o.switch_margin) return r.profile[best].schedule;
    if (best_ratio < 1e300)
      r.report.note(fmt::format("kept {}: the best candidate {} took {:.3f}x its time (switch below {:.3f}x)",
                                to_string(holder), to_string(r.profile[best].schedule), best_ratio, 1.0 - o.switch_margin));
    return holder;
  };

  // The probe: the incumbent on one plan-sized piece, then a bridge; its time sizes the chunks.
  if (!measured(inc, plan.piece_w, "probe")) return run_whole(inc, "not profiled: no room for a chunk");
  bridge(inc, 2 * plan.piece_w);
  collect(0);
  const double t0 = r.profile[0].seconds;
  const ChunkSizing cs = size_chunks(g, plan, t0, o);
  if (cs.candidates == 0) {
    r.source = "probe: profiling cannot pay, kept " + to_string(inc);
    r.report.note(fmt::format("probe: {} blocks took {:.1f} us; {}: stopped after one chunk, kept {}",
                              plan.piece_w * std::uint64_t(plan.piece_h), t0 * 1e6, cs.why, to_string(inc)));
  } else {
    std::vector<Schedule> cands(plan.candidates.begin() + 1, plan.candidates.begin() + 1 + cs.candidates);
    chosen = round(inc, cands, cs.width, "candidate");
    r.source = "profiled";
    // Refinement: neighbours of a parameterised winner, in what is left of the budget.
    if (o.refine) {
      const std::uint64_t c1 = std::uint64_t(cs.width) * plan.piece_h;
      const std::uint64_t left = plan.budget_blocks > r.profiled_blocks ? plan.budget_blocks - r.profiled_blocks : 0;
      auto around = refinements(chosen, g);
      around.erase(std::remove_if(around.begin(), around.end(),
                                  [&](const Schedule& s) {
                                    return !fits(rescale(s, g, {cs.width, plan.piece_h}), {cs.width, plan.piece_h});
                                  }),
                   around.end());
      if (around.size() > left / (2 * c1)) around.resize(left / (2 * c1));
      if (!around.empty()) chosen = round(chosen, around, cs.width, "refine");
    }
  }
  std::size_t measured_events = ev.size();
  for (const BlockRect& rc : layout.rest()) run(chosen, rc);
  const std::size_t end = record();
  ev[end].sync();
  r.total_seconds = ev[end].seconds_since(ev[start]);
  r.profile_seconds = 0;
  for (const auto& p : r.profile) r.profile_seconds += p.seconds;
  r.remainder_seconds = ev[end].seconds_since(ev[measured_events - 1]);
  r.chosen = chosen;
  for (const auto& p : r.profile)
    r.report.add(fmt::format("{} {}", p.role, to_string(p.schedule)), "gpu", p.seconds,
                 fmt::format("blocks ({}, {}) {}x{}, {:.3f} us/1000 blocks{}", p.rect.x0, p.rect.y0, p.rect.w, p.rect.h,
                             p.per_block * 1e9, p.ratio > 0 ? fmt::format(", {:.3f}x the incumbent", p.ratio) : ""));
  r.report.add("rest " + to_string(chosen), "gpu", r.remainder_seconds,
               fmt::format("{} blocks after the last measured chunk", g.count() - r.profiled_blocks));
  r.report.note(fmt::format("measured {} of {} blocks ({:.1f}%) in {} chunks of {} rows; incumbent {}, chose {}; "
                            "total incl. profiling and host syncs {:.3f} ms",
                            r.profiled_blocks, g.count(), 100.0 * double(r.profiled_blocks) / double(g.count()),
                            r.profile.size(), plan.piece_h, to_string(inc), to_string(chosen), r.total_seconds * 1e3));
  if (o.use_cache) {
    nlohmann::json j;
    j["schedule"] = to_string(chosen);
    j["profile"] = nlohmann::json::array();
    for (const auto& p : r.profile) j["profile"].push_back({to_string(p.schedule), p.role, p.per_block});
    cache.put(op, dev, cls, j);
  }
  return r;
}

#else  // CPU-only build

ControllerResult run_controlled(BandLauncher&, const ControllerOptions&) {
  throw NoDeviceError("running schedule kernels needs a GPU (this build has no CUDA)");
}

#endif

}  // namespace tandem::schedule
