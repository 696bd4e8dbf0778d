// Choosing a schedule by time, energy or IPC: whole-grid runs repeated to span the energy
// counter's resolution, hardware counters over one run (signal.hpp). The sizing and the pick are
// pure code, tested on the CPU.
#include "tandem/schedule/signal.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/counter_profiler.hpp"
#include "core/energy_counter.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"

#if TANDEM_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

namespace tandem::schedule {

Signal parse_signal(const std::string& text) {
  if (text == "time") return Signal::time;
  if (text == "energy") return Signal::energy;
  if (text == "ipc") return Signal::ipc;
  throw UsageError(fmt::format("signal '{}' is not one of time, energy, ipc", text));
}

std::string to_string(Signal s) {
  switch (s) {
    case Signal::time: return "time";
    case Signal::energy: return "energy";
    case Signal::ipc: return "ipc";
  }
  return "?";
}

std::uint32_t repeats_for_span(double run_seconds, double min_span_seconds, std::uint32_t max_repeats) {
  if (!(run_seconds > 0)) throw UsageError(fmt::format("run_seconds = {} must be > 0", run_seconds));
  if (!(min_span_seconds >= 0)) throw UsageError(fmt::format("min_span_seconds = {} must be >= 0", min_span_seconds));
  const double want = std::ceil(min_span_seconds / run_seconds);
  return std::uint32_t(std::clamp(want, 1.0, double(std::max<std::uint32_t>(1, max_repeats))));
}

std::optional<std::size_t> pick_by(const std::vector<SignalSample>& samples, Signal s) {
  // Every signal as a cost, lower is better: IPC negated.
  auto cost = [s](const SignalSample& x) {
    switch (s) {
      case Signal::time: return x.seconds;
      case Signal::energy: return x.joules;
      case Signal::ipc: return -x.ipc;
    }
    return std::numeric_limits<double>::quiet_NaN();
  };
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double v = cost(samples[i]);
    if (std::isnan(v)) continue;
    if (!best || v < cost(samples[*best])) best = i;
  }
  return best;
}

std::vector<Schedule> signal_candidates(const std::vector<Schedule>& ranking, const std::optional<Schedule>& incumbent,
                                        Grid g, std::uint32_t max_candidates) {
  std::vector<Schedule> out;
  auto add = [&](const Schedule& s) {
    if (out.size() >= max_candidates || !fits(s, g)) return;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  if (incumbent) add(*incumbent);
  else if (!ranking.empty()) add(ranking.front());
  add(Schedule::sequential());
  for (const Schedule& s : ranking) add(s);
  return out;
}

#if TANDEM_HAS_CUDA

namespace {

std::string current_bus_id() {
  int dev = 0;
  TANDEM_CUDA(cudaGetDevice(&dev));
  char id[32] = {};
  TANDEM_CUDA(cudaDeviceGetPCIBusId(id, int(sizeof id), dev));
  return id;
}

// One measurement: `repeats` whole-grid runs of s; seconds and joules per run.
SignalSample measure(BandLauncher& k, const Schedule& s, std::uint32_t repeats, const EnergyCounter* energy) {
  const Grid g = k.grid();
  gpu::Event e0, e1;
  const std::uint64_t mj0 = energy ? energy->millijoules() : 0;
  e0.record(k.stream());
  for (std::uint32_t i = 0; i < repeats; ++i) k.launch_rect(s, {0, 0, g.w, g.h});
  e1.record(k.stream());
  e1.sync();
  const std::uint64_t mj1 = energy ? energy->millijoules() : 0;
  SignalSample r{s, repeats, e1.seconds_since(e0) / repeats, std::numeric_limits<double>::quiet_NaN()};
  if (energy) r.joules = joules_per_run(mj0, mj1, repeats);
  return r;
}

double single_run_seconds(BandLauncher& k, const Schedule& s) {
  return std::max(measure(k, s, 1, nullptr).seconds, 1e-9);
}

// IPC of one whole-grid run per sample (all or none), its cost noted in the report; the reason
// when the counters cannot be read.
std::string read_ipc(BandLauncher& k, std::vector<SignalSample>& samples, Report& report) {
  const Grid g = k.grid();
  std::vector<double> ipc;
  double seconds = 0;
  int replays = 0;
  for (const SignalSample& s : samples) {
    const CounterReading r = read_counters({metric::ipc}, [&] { k.launch_rect(s.schedule, {0, 0, g.w, g.h}); });
    if (!r.ok()) return r.unavailable;
    ipc.push_back(r.values.at(0));
    seconds += r.seconds;
    replays += r.passes;
  }
  for (std::size_t i = 0; i < samples.size(); ++i) samples[i].ipc = ipc[i];
  report.note(fmt::format("IPC ({}) read in {} ({} runs of the grid under the profiler)", metric::ipc,
                          human_seconds(seconds), replays));
  return {};
}

std::string describe(const SignalSample& s) {
  return fmt::format("{} runs; per run {}, {}{}", s.repeats, human_seconds(s.seconds),
                     std::isnan(s.joules) ? std::string("energy not read") : fmt::format("{:.4g} J", s.joules),
                     std::isnan(s.ipc) ? std::string() : fmt::format(", IPC {:.3f}", s.ipc));
}

}  // namespace

SignalComparison compare_signals(BandLauncher& k, const std::vector<Schedule>& candidates, const SignalOptions& o) {
  if (candidates.empty()) throw UsageError("candidates: none to compare");
  if (o.rounds < 1) throw UsageError(fmt::format("rounds = {} must be >= 1", o.rounds));
  gpu::require();
  SignalComparison c;
  c.report.operation = "schedule signals " + k.name();
  const EnergyCounter counter(current_bus_id());
  if (!counter.available()) c.energy_unavailable = counter.why();
  const EnergyCounter* energy = counter.available() ? &counter : nullptr;
  // Sizing: one warm run of each candidate, then repeats so one measurement spans min_span_seconds.
  std::vector<std::uint32_t> repeats;
  for (const Schedule& s : candidates) {
    single_run_seconds(k, s);  // warm-up: module load, clocks, caches
    repeats.push_back(repeats_for_span(single_run_seconds(k, s), o.min_span_seconds, o.max_repeats));
  }
  for (std::size_t i = 0; i < candidates.size(); ++i)
    c.samples.push_back(
        {candidates[i], repeats[i], std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()});
  for (int round = 0; round < o.rounds; ++round)
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const SignalSample m = measure(k, candidates[i], repeats[i], energy);
      SignalSample& best = c.samples[i];
      best.seconds = std::min(best.seconds, m.seconds);
      if (!std::isnan(m.joules)) best.joules = std::isnan(best.joules) ? m.joules : std::min(best.joules, m.joules);
    }
  c.by_time = *pick_by(c.samples, Signal::time);
  c.by_energy = pick_by(c.samples, Signal::energy);
  if (energy && !c.by_energy)
    c.energy_unavailable =
        fmt::format("the energy counter did not move during {:.0f} ms measurements", o.min_span_seconds * 1e3);
  if (o.signal == Signal::ipc) {
    c.ipc_unavailable = read_ipc(k, c.samples, c.report);
    if (c.ipc_unavailable.empty()) c.by_ipc = pick_by(c.samples, Signal::ipc);
  }
  c.signal = Signal::time;
  c.chosen = c.by_time;
  if (o.signal == Signal::energy && c.by_energy) c.signal = Signal::energy, c.chosen = *c.by_energy;
  if (o.signal == Signal::ipc && c.by_ipc) c.signal = Signal::ipc, c.chosen = *c.by_ipc;
  if (o.signal == Signal::energy && c.signal == Signal::time)
    c.report.notice("energy could not be read (" + c.energy_unavailable + "): chose by time");
  if (o.signal == Signal::ipc && c.signal == Signal::time)
    c.report.notice("IPC could not be read (" + c.ipc_unavailable + "): chose by time");
  for (const SignalSample& s : c.samples)
    c.report.add("runs of " + to_string(s.schedule), "gpu", s.seconds * s.repeats, describe(s));
  return c;
}

#else  // CPU-only build

SignalComparison compare_signals(BandLauncher&, const std::vector<Schedule>&, const SignalOptions&) {
  throw NoDeviceError("comparing schedules by time, energy or IPC needs a GPU (this build has no CUDA)");
}

#endif

}  // namespace tandem::schedule
