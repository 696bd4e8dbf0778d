// The controller (the seed's performance control): profile a minority of the blocks under
// successive candidate schedules, run the majority remainder under the fastest, cache the choice.
//
// Chunks are bands of whole block rows, in order from the top: chunk i covers rows
// [i*c, (i+1)*c) and is run as its own launch with candidate i ordering the W x c band; the
// remainder rows run in one launch. Every block runs exactly once whatever the choice, so the
// result is the same; chunks are timed with events recorded between back-to-back launches on one
// stream (a launch starts only after the previous one drained, so each interval holds one chunk).
#include "tandem/schedule/kernels.hpp"

#include <algorithm>

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
  auto st = static_cast<cudaStream_t>(k.stream());
  TuningCache& cache = o.cache ? *o.cache : TuningCache::global();
  const std::string op = "schedule/" + k.name();
  const std::string cls = fmt::format("{}x{}", g.w, g.h);
  const std::string dev = device_key();
  ControllerResult r;
  r.report.operation = "schedule " + k.name();

  auto run_whole = [&](const Schedule& s, const std::string& source) {
    gpu::Event e0, e1;
    e0.record(st);
    k.launch(s, 0, g.h);
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
  if (plan.candidates.empty()) {
    const Schedule s = o.fallback && fits(*o.fallback, g) ? *o.fallback : Schedule::sequential();
    r.report.note("not profiled: " + plan.why_not + "; ran " + to_string(s));
    return run_whole(s, "not profiled: " + plan.why_not);
  }

  const std::uint32_t c = plan.chunk_rows;
  const Grid band{g.w, c};
  std::uint32_t y = 0;
  std::vector<gpu::Event> ev;
  ev.reserve(plan.candidates.size() + plan.refine_chunks + 3);
  ev.emplace_back();
  ev.back().record(st);
  for (const Schedule& s : plan.candidates) {
    k.launch(s, y, c);
    ev.emplace_back();
    ev.back().record(st);
    r.profile.push_back({s, y, c, 0, 0});
    y += c;
  }
  // The bridge: one more chunk, under sequential order, queued before the host waits for the
  // profile, so the GPU stays busy while the host reads the events and picks the winner.
  const std::size_t profiled_events = ev.size();
  std::uint32_t bridge_rows = 0;
  if (g.h - y > 2 * c) {
    bridge_rows = c;
    k.launch(Schedule::sequential(), y, c);
  }
  ev[profiled_events - 1].sync();
  std::size_t best = 0;
  for (std::size_t i = 0; i < r.profile.size(); ++i) {
    r.profile[i].seconds = ev[i + 1].seconds_since(ev[i]);
    r.profile[i].per_block = r.profile[i].seconds / double(band.count());
    if (r.profile[i].seconds < r.profile[best].seconds) best = i;
  }
  y += bridge_rows;
  r.profile_seconds = ev[profiled_events - 1].seconds_since(ev.front());
  std::vector<double> times;
  for (const auto& p : r.profile) times.push_back(p.seconds);
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  const bool too_short = times[times.size() / 2] < o.min_chunk_seconds;
  // Refinement: neighbours of a parameterised winner, in the chunks left in the budget (one more
  // host round trip, not hidden).
  if (plan.refine_chunks && !too_short) {
    auto around = refinements(r.profile[best].schedule, band);
    if (around.size() > plan.refine_chunks) around.resize(plan.refine_chunks);
    std::vector<gpu::Event> rev(around.size() + 1);
    rev[0].record(st);
    const std::size_t first = r.profile.size();
    for (std::size_t i = 0; i < around.size(); ++i) {
      k.launch(around[i], y, c);
      rev[i + 1].record(st);
      r.profile.push_back({around[i], y, c, 0, 0});
      y += c;
    }
    rev.back().sync();
    for (std::size_t i = first; i < r.profile.size(); ++i) {
      r.profile[i].seconds = rev[i - first + 1].seconds_since(rev[i - first]);
      r.profile[i].per_block = r.profile[i].seconds / double(band.count());
      r.profile_seconds += r.profile[i].seconds;
      if (r.profile[i].seconds < r.profile[best].seconds) best = i;
    }
  }
  Schedule chosen = r.profile[best].schedule;
  const Grid rest{g.w, g.h - y};
  if (too_short) {
    chosen = o.fallback && fits(*o.fallback, rest) ? *o.fallback : Schedule::sequential();
    r.report.note(fmt::format("profile not trusted: median chunk {:.1f} us < {:.1f} us (launch and tail dominate); "
                              "ran the rest under {}",
                              times[times.size() / 2] * 1e6, o.min_chunk_seconds * 1e6, to_string(chosen)));
  }
  if (rest.h > 0) {
    if (!fits(chosen, rest)) chosen = Schedule::sequential();
    gpu::Event e0, e1;
    e0.record(st);
    k.launch(chosen, y, rest.h);
    e1.record(st);
    e1.sync();
    r.remainder_seconds = e1.seconds_since(e0);
    r.total_seconds = e1.seconds_since(ev.front());
  } else {
    r.total_seconds = r.profile_seconds;
  }
  r.chosen = chosen;
  r.source = too_short ? "profile too short to trust: fallback" : "profiled";
  for (const auto& p : r.profile)
    r.report.add("profile " + to_string(p.schedule), "gpu", p.seconds,
                 fmt::format("rows {}..{}, {:.3f} us/1000 blocks{}", p.y0, p.y0 + p.rows, p.per_block * 1e9,
                             p.schedule == r.profile[best].schedule ? "  <- best" : ""));
  if (bridge_rows)
    r.report.add("bridge sequential", "gpu", 0,
                 fmt::format("{} rows run while the host picks the winner (time inside the total)", bridge_rows));
  r.report.add("remainder " + to_string(chosen), "gpu", r.remainder_seconds,
               fmt::format("rows {}..{} ({} blocks)", y, g.h, rest.count()));
  r.report.note(fmt::format("profiled {} of {} block rows ({:.1f}%) in chunks of {} rows; chose {}; total incl. "
                            "profiling and host sync {:.3f} ms",
                            r.profile.size() * c, g.h, 100.0 * r.profile.size() * c / g.h, c, to_string(chosen),
                            r.total_seconds * 1e3));
  if (o.use_cache) {
    nlohmann::json j;
    j["schedule"] = to_string(chosen);
    j["profile"] = nlohmann::json::array();
    for (const auto& p : r.profile) j["profile"].push_back({to_string(p.schedule), p.per_block});
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
