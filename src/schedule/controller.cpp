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
#include "tandem/schedule/controller.hpp"

#include <algorithm>
#include <deque>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "schedule/profile_plan.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tune.hpp"

#if TANDEM_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
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

// One controlled run: the stages of run_controlled as methods, sharing the launcher, the plan, the
// piece layout, the events and the result.
class Controller {
 public:
  Controller(BandLauncher& k, const ControllerOptions& o)
      : k_(k),
        o_(o),
        g_(k.grid()),
        st_(k.stream()),
        cache_(o.cache ? *o.cache : TuningCache::global()),
        op_("schedule/" + k.name()),
        cls_(fmt::format("{}x{}", g_.w, g_.h)),
        dev_(device_key()) {
    r_.report.operation = "schedule " + k.name();
  }

  ControllerResult run() {
    if (o_.use_cache)
      if (auto s = cached_choice()) return run_whole(*s, "cache");
    const std::uint32_t min_chunk = o_.min_chunk_blocks ? o_.min_chunk_blocks : 2 * default_window();
    plan_ = plan_profile(g_, o_, min_chunk);
    inc_ = plan_.candidates.front();
    r_.incumbent = inc_;
    if (!plan_.why_not.empty()) {
      r_.report.note("not profiled: " + plan_.why_not + "; ran " + to_string(inc_));
      return run_whole(inc_, "not profiled: " + plan_.why_not);
    }
    layout_.emplace(g_, plan_.piece_h);
    start_ = record();
    // The probe: the incumbent on one plan-sized piece, then a bridge; its time sizes the chunks.
    if (!measured(inc_, plan_.piece_w, "probe")) return run_whole(inc_, "not profiled: no room for a chunk");
    bridge(inc_, 2 * plan_.piece_w);
    collect(0);
    const Schedule chosen = profile(r_.profile[0].seconds);
    run_rest(chosen);
    report(chosen);
    if (o_.use_cache) store(chosen);
    return r_;
  }

 private:
  // The choice cached for this kernel, grid and device, when it still fits the grid (a malformed
  // entry counts as missing: profiled again and overwritten).
  std::optional<Schedule> cached_choice() {
    auto parse = [](const nlohmann::json& j) { return parse_schedule(j.at("schedule").get<std::string>()); };
    if (auto s = cache_.lookup(op_, dev_, cls_, parse, &r_.report); s && fits(*s, g_)) {
      r_.report.note(fmt::format("cached choice for {} on {} ({}): {}", k_.name(), cls_, dev_, to_string(*s)));
      return s;
    }
    return std::nullopt;
  }

  ControllerResult run_whole(const Schedule& s, const std::string& source) {
    gpu::Event e0, e1;
    e0.record(st_);
    k_.launch_rect(s, {0, 0, g_.w, g_.h});
    e1.record(st_);
    e1.sync();
    r_.chosen = s;
    r_.source = source;
    r_.remainder_seconds = r_.total_seconds = e1.seconds_since(e0);
    r_.report.add("run " + to_string(s), "gpu", r_.total_seconds, fmt::format("{} blocks, {}", g_.count(), source));
    return r_;
  }

  // Runs s on a sub-rectangle, rescaled to it (sequential where it does not fit: same blocks).
  void run_on(const Schedule& s, const BlockRect& rc) {
    Schedule a = rescale(s, g_, rc.grid());
    if (!fits(a, rc.grid())) a = Schedule::sequential();
    k_.launch_rect(a, rc);
  }

  std::size_t record() {
    ev_.emplace_back();
    ev_.back().record(st_);
    return ev_.size() - 1;
  }

  // A measured piece of w columns; strip ends skipped to make room run under the incumbent.
  bool measured(const Schedule& s, std::uint32_t w, const char* role) {
    BlockRect pc;
    std::vector<BlockRect> skipped;
    if (!layout_->take(w, pc, skipped)) return false;
    for (const auto& sk : skipped) run_on(inc_, sk);
    const std::size_t a = record();
    run_on(s, pc);
    const std::size_t b = record();
    r_.profile.push_back({s, pc, 0, 0, role, 0});
    spans_.push_back({a, b});
    r_.profiled_blocks += pc.count();
    return true;
  }

  // Unmeasured incumbent work that keeps the GPU busy while the host waits.
  void bridge(const Schedule& s, std::uint32_t w) {
    BlockRect pc;
    std::vector<BlockRect> skipped;
    if (!layout_->take(w, pc, skipped)) return;
    for (const auto& sk : skipped) run_on(inc_, sk);
    run_on(s, pc);
    r_.report.add("bridge " + to_string(s), "gpu", 0,
                  fmt::format("blocks ({}, {}) {}x{}, run while the host waits (time inside the total)", pc.x0, pc.y0,
                              pc.w, pc.h));
  }

  void collect(std::size_t from) {
    ev_[spans_.back().e1].sync();
    for (std::size_t i = from; i < r_.profile.size(); ++i) {
      r_.profile[i].seconds = ev_[spans_[i].e1].seconds_since(ev_[spans_[i].e0]);
      r_.profile[i].per_block = r_.profile[i].seconds / double(r_.profile[i].rect.count());
    }
  }

  // After the probe (t0 seconds): the candidates in chunks sized from it, then the refinement.
  Schedule profile(double t0) {
    const ChunkSizing cs = size_chunks(g_, plan_, t0, o_);
    if (cs.candidates == 0) {
      r_.source = "probe: profiling cannot pay, kept " + to_string(inc_);
      r_.report.note(fmt::format("probe: {} blocks took {:.1f} us; {}: stopped after one chunk, kept {}",
                                 plan_.piece_w * std::uint64_t(plan_.piece_h), t0 * 1e6, cs.why, to_string(inc_)));
      return inc_;
    }
    std::vector<Schedule> cands(plan_.candidates.begin() + 1, plan_.candidates.begin() + 1 + cs.candidates);
    Schedule chosen = round(inc_, cands, cs.width, "candidate");
    r_.source = "profiled";
    if (o_.refine) chosen = refine(chosen, cs.width);
    return chosen;
  }

  // Neighbours of a parameterised winner, in what is left of the budget.
  Schedule refine(const Schedule& chosen, std::uint32_t width) {
    const std::uint64_t c1 = std::uint64_t(width) * plan_.piece_h;
    const std::uint64_t left = plan_.budget_blocks > r_.profiled_blocks ? plan_.budget_blocks - r_.profiled_blocks : 0;
    auto around = refinements(chosen, g_);
    around.erase(std::remove_if(around.begin(), around.end(),
                                [&](const Schedule& s) {
                                  return !fits(rescale(s, g_, {width, plan_.piece_h}), {width, plan_.piece_h});
                                }),
                 around.end());
    if (around.size() > left / (2 * c1)) around.resize(left / (2 * c1));
    return around.empty() ? chosen : round(chosen, around, width, "refine");
  }

  // One round: candidate, incumbent, candidate, incumbent, ... then a bridge, then compare each
  // candidate with the same-width incumbent chunks measured just before and after it.
  Schedule round(const Schedule& holder, const std::vector<Schedule>& cands, std::uint32_t w, const char* role) {
    const std::size_t first = r_.profile.size();
    for (const Schedule& c : cands) {
      if (!measured(c, w, role)) break;
      if (!measured(holder, w, "incumbent")) break;
    }
    if (r_.profile.size() == first) return holder;
    bridge(holder, 2 * w);
    collect(first);
    std::size_t best = 0;
    double best_ratio = 1e300;
    for (std::size_t i = first; i < r_.profile.size(); ++i) {
      if (r_.profile[i].role != role) continue;
      const std::optional<double> ratio = ratio_to_neighbours(i, holder);
      if (!ratio) continue;
      r_.profile[i].ratio = *ratio;
      if (*ratio < best_ratio) best_ratio = *ratio, best = i;
    }
    if (best_ratio < 1.0 - o_.switch_margin) return r_.profile[best].schedule;
    if (best_ratio < 1e300)
      r_.report.note(fmt::format("kept {}: the best candidate {} took {:.3f}x its time (switch below {:.3f}x)",
                                 to_string(holder), to_string(r_.profile[best].schedule), best_ratio,
                                 1.0 - o_.switch_margin));
    return holder;
  }

  // Chunk i's time over the mean of the holder's same-size chunks right before and after it
  // (none when there is no such chunk).
  std::optional<double> ratio_to_neighbours(std::size_t i, const Schedule& holder) const {
    double sum = 0;
    int n = 0;
    for (std::size_t j : {i - 1, i + 1}) {
      if (j >= r_.profile.size() || j + 1 == 0) continue;
      const auto& p = r_.profile[j];
      // Not the probe: the first launch of a kernel also pays for lazy module loading, a cold L2
      // and clocks ramping up.
      if (p.role != "probe" && p.schedule == holder && p.rect.count() == r_.profile[i].rect.count())
        sum += p.seconds, ++n;
    }
    if (!n) return std::nullopt;
    return r_.profile[i].seconds / (sum / n);
  }

  // The majority remainder under the choice, and the times.
  void run_rest(const Schedule& chosen) {
    const std::size_t measured_events = ev_.size();
    for (const BlockRect& rc : layout_->rest()) run_on(chosen, rc);
    const std::size_t end = record();
    ev_[end].sync();
    r_.total_seconds = ev_[end].seconds_since(ev_[start_]);
    r_.profile_seconds = 0;
    for (const auto& p : r_.profile) r_.profile_seconds += p.seconds;
    r_.remainder_seconds = ev_[end].seconds_since(ev_[measured_events - 1]);
    r_.chosen = chosen;
  }

  void report(const Schedule& chosen) {
    for (const auto& p : r_.profile)
      r_.report.add(
          fmt::format("{} {}", p.role, to_string(p.schedule)), "gpu", p.seconds,
          fmt::format("blocks ({}, {}) {}x{}, {:.3f} us/1000 blocks{}", p.rect.x0, p.rect.y0, p.rect.w, p.rect.h,
                      p.per_block * 1e9, p.ratio > 0 ? fmt::format(", {:.3f}x the incumbent", p.ratio) : ""));
    r_.report.add("rest " + to_string(chosen), "gpu", r_.remainder_seconds,
                  fmt::format("{} blocks after the last measured chunk", g_.count() - r_.profiled_blocks));
    r_.report.note(
        fmt::format("measured {} of {} blocks ({:.1f}%) in {} chunks of {} rows; incumbent {}, chose {}; "
                    "total incl. profiling and host syncs {:.3f} ms",
                    r_.profiled_blocks, g_.count(), 100.0 * double(r_.profiled_blocks) / double(g_.count()),
                    r_.profile.size(), plan_.piece_h, to_string(inc_), to_string(chosen), r_.total_seconds * 1e3));
  }

  void store(const Schedule& chosen) {
    nlohmann::json j;
    j["schedule"] = to_string(chosen);
    j["profile"] = nlohmann::json::array();
    for (const auto& p : r_.profile) j["profile"].push_back({to_string(p.schedule), p.role, p.per_block});
    cache_.put(op_, dev_, cls_, j);
  }

  struct Span {
    std::size_t e0, e1;
  };

  BandLauncher& k_;
  const ControllerOptions& o_;
  const Grid g_;
  const cudaStream_t st_;
  TuningCache& cache_;
  const std::string op_, cls_, dev_;
  ControllerResult r_;
  ProfilePlan plan_;
  Schedule inc_;
  std::optional<PieceLayout> layout_;
  std::deque<gpu::Event> ev_;  // start/end of each measured piece (deque: events do not move)
  std::vector<Span> spans_;    // parallel to r_.profile
  std::size_t start_{0};
};

}  // namespace

ControllerResult run_controlled(BandLauncher& k, const ControllerOptions& o) {
  gpu::require();
  return Controller(k, o).run();
}

#else  // CPU-only build

ControllerResult run_controlled(BandLauncher&, const ControllerOptions&) {
  throw NoDeviceError("running schedule kernels needs a GPU (this build has no CUDA)");
}

#endif

}  // namespace tandem::schedule
