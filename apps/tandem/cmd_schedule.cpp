// tandem schedule: draw block schedules, pick one statically, or run a benchmark kernel under a
// schedule / under the controller that picks one by measurement.
#include <cmath>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "options.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/schedule.hpp"
#include "tandem/schedule/kernels.hpp"
#include "tandem/schedule/signal.hpp"

namespace {

using namespace tandem;
using namespace tandem::schedule;

struct Args {
  std::string show, style{"auto"}, kernel, signal{"time"};
  std::uint32_t size{0};
  double fraction{0.10};
  bool exhaustive{false}, explain{false}, json{false}, no_cache{false}, ticket{false};
  std::uint32_t window{0};
  double energy_span_ms{50};
};

void print_static(const StaticChoice& c, std::uint32_t n, const KernelSpec& k) {
  std::cout << fmt::format("static choice for {} at {}^2 (grid {}x{}, window {} co-resident blocks, unit {}x{}): {}\n",
                           k.name, n, k.grid(n).w, k.grid(n).h, c.window, c.unit, c.unit, to_string(c.best));
  for (const auto& s : c.scores)
    std::cout << fmt::format("  {:<16} reuse {:.3f}{}\n", to_string(s.schedule), s.score,
                             s.schedule == c.best ? "  <- static choice" : "");
}

// Output checked against the CPU reference on small sizes, else against `ref` (another schedule).
bool check_output(KernelRunner& r, const KernelSpec& k, std::uint32_t n, std::vector<float>* ref, std::string& how) {
  const auto out = r.output();
  if (n <= 1024) {
    const auto want = reference(k, n, r.input(0), r.input(1));
    const double e = max_rel_error(out, want);
    how = fmt::format("max relative error vs CPU reference {:.2e}", e);
    return e <= 1e-4;
  }
  if (ref->empty()) {
    *ref = out;
    how = "reference for the other schedules";
    return true;
  }
  how = "identical to the first schedule";
  return out == *ref;
}

// Energy or IPC as the signal: every candidate's whole grid repeated to span the energy counter's
// resolution (IPC from one more run each); each signal's pick and what it costs in time and energy.
void run_signals(KernelRunner& r, const StaticChoice& st, const Grid& g, const Args& a, Signal signal) {
  SignalOptions so;
  so.signal = signal;
  so.min_span_seconds = a.energy_span_ms * 1e-3;
  const auto cands = signal_candidates(static_ranking(st), st.best, g, 4);
  const SignalComparison c = compare_signals(r, cands, so);
  tandem::cli::print_notices(c.report);
  auto joules = [](double j) { return std::isnan(j) ? std::string("-") : fmt::format("{:.4g} J", j); };
  const bool ipc = signal == Signal::ipc;
  std::cout << fmt::format("signals: {} candidates, each run whole and repeated to span >= {:.0f} ms{}{}{}\n",
                           cands.size(), so.min_span_seconds * 1e3, ipc ? "; IPC over one run each" : "",
                           c.energy_unavailable.empty() ? "" : "; energy not read: " + c.energy_unavailable,
                           c.ipc_unavailable.empty() ? "" : "; IPC not read: " + c.ipc_unavailable);
  for (std::size_t i = 0; i < c.samples.size(); ++i) {
    const auto& s = c.samples[i];
    std::cout << fmt::format("  {:<16} {:>6} runs  {:>10}/run  {:>10}/run{}{}{}{}\n", to_string(s.schedule), s.repeats,
                             human_seconds(s.seconds), joules(s.joules),
                             ipc ? (std::isnan(s.ipc) ? "  IPC -" : fmt::format("  IPC {:.3f}", s.ipc)) : "",
                             i == c.by_time ? "  <- time" : "", c.by_energy && i == *c.by_energy ? "  <- energy" : "",
                             c.by_ipc && i == *c.by_ipc ? "  <- ipc" : "");
  }
  // Each signal's pick, what it costs in time and energy, and whether it is the time pick.
  auto pick = [&](const char* name, std::size_t i) {
    const auto& s = c.samples[i];
    return fmt::format("; {} picks {} ({}, {}): {}", name, to_string(s.schedule), human_seconds(s.seconds),
                       joules(s.joules), i == c.by_time ? "the same schedule" : "different schedules");
  };
  const auto& t = c.samples[c.by_time];
  std::cout << fmt::format("time picks {} ({}, {})", to_string(t.schedule), human_seconds(t.seconds), joules(t.joules));
  if (c.by_energy) std::cout << pick("energy", *c.by_energy);
  if (c.by_ipc) std::cout << pick("ipc", *c.by_ipc);
  std::cout << fmt::format("\nchosen by {}: {}\n", to_string(c.signal), to_string(c.samples[c.chosen].schedule));
  if (a.explain) std::cout << c.report.explain();
}

int run_kernel(const Args& a) {
  const KernelSpec& k = kernel_spec(a.kernel);
  check_size(a.size);
  const Signal signal = parse_signal(a.signal);
  if (signal != Signal::time && a.style != "auto")
    throw UsageError(fmt::format("--signal {} chooses among schedules: it goes with --style auto, not {}",
                                 to_string(signal), a.style));
  const Grid g = k.grid(a.size);
  const std::uint32_t window = a.window ? a.window : default_window();
  std::optional<StaticChoice> st;
  if (a.style == "static" || a.exhaustive || a.explain)
    st = static_select(k, a.size, candidates(g, a.exhaustive), window);
  if (a.style == "static") print_static(*st, a.size, k);
  std::optional<Schedule> fixed;
  if (a.style != "auto" && a.style != "static") {
    fixed = parse_schedule(a.style);
    validate(*fixed, g);
  }
  if (gpu_count() == 0) {
    if (a.style == "static" && !a.exhaustive) {
      std::cout << "no GPU: the static choice was not run (timings need a GPU)\n";
      return 0;
    }
    throw NoDeviceError(fmt::format("running kernel '{}' needs a GPU and none is usable", k.name));
  }
  // The controller starts from the static choice and profiles only the static top few.
  if (a.style == "auto" && !st) st = static_select(k, a.size, candidates(g, false), window);
  KernelRunner r(k, a.size);
  r.set_ticket(a.ticket);
  std::vector<float> ref;
  bool ok = true;
  auto rate = [&](double s) {
    return flops(k, a.size) > 0 && k.name == "matmul" ? fmt::format("{:.0f} GFLOP/s", flops(k, a.size) / s * 1e-9)
                                                      : fmt::format("{:.0f} GB/s", k.min_bytes(a.size) / s * 1e-9);
  };
  std::cout << fmt::format("{} ({}), {}^2 f32, grid {}x{} blocks\n", k.name, k.description, a.size, g.w, g.h);
  if (a.exhaustive) {
    r.time_full(Schedule::sequential());  // warm-up
    double seq = 0, best = 1e30;
    Schedule best_s;
    for (const Schedule& s : candidates(g, true)) {
      r.poison_output();
      double t = 1e30;
      for (int i = 0; i < 3; ++i) t = std::min(t, r.time_full(s));
      std::string how;
      const bool good = check_output(r, k, a.size, &ref, how);
      ok &= good;
      if (s == Schedule::sequential()) seq = t;
      if (t < best) best = t, best_s = s;
      std::cout << fmt::format("  {:<16} {:>10}  {:>14}  {}{}\n", to_string(s), human_seconds(t), rate(t),
                               good ? "ok" : "WRONG: ", good ? "" : how);
    }
    std::cout << fmt::format("best {} ({:.3f}x sequential); static choice {}\n", to_string(best_s), seq / best,
                             to_string(st->best));
  }
  if (fixed || a.style == "static") {
    const Schedule s = fixed ? *fixed : st->best;
    r.poison_output();
    const double t = r.time_full(s);
    std::string how;
    const bool good = check_output(r, k, a.size, &ref, how);
    ok &= good;
    std::cout << fmt::format("{}: {} ({}), {}\n", to_string(s), human_seconds(t), rate(t), how);
  } else if (signal != Signal::time) {
    r.poison_output();
    run_signals(r, *st, g, a, signal);
    std::string how;
    ok &= check_output(r, k, a.size, &ref, how);
    std::cout << "output: " << how << '\n';
  } else {
    ControllerOptions o;
    o.profile_fraction = a.fraction;
    o.use_cache = !a.no_cache;
    if (st) {
      o.fallback = st->best;            // the incumbent, kept unless measured clearly slower
      o.ranking = static_ranking(*st);  // only the static top few and sequential are profiled
    }
    r.poison_output();
    const auto res = run_controlled(r, o);
    std::string how;
    const bool good = check_output(r, k, a.size, &ref, how);
    ok &= good;
    std::cout << fmt::format("controller: {} ({}; static choice {}), total {} ({}) incl. profiling {}; {}\n",
                             to_string(res.chosen), res.source, to_string(res.incumbent),
                             human_seconds(res.total_seconds), rate(res.total_seconds),
                             human_seconds(res.profile_seconds), how);
    if (a.explain) std::cout << res.report.explain();
  }
  if (a.explain && st && a.style != "static") print_static(*st, a.size, k);
  if (!ok) std::cerr << "tandem: error: a result did not match its reference\n";
  return ok ? 0 : 1;
}

const bool registered = tandem::cli::register_command(
    {"schedule", "Block schedules: draw one, pick one statically, or run a kernel under the measuring controller",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_option("--show", a->show, "Draw the order on a WxH grid (e.g. 8x6) instead of running a kernel");
       app.add_option("--style", a->style,
                      "auto (controller) | static | sequential | strided:S:G | zigzag | tiled:WxH | hilbert")
           ->capture_default_str();
       app.add_option("--kernel", a->kernel, "intimg-row | intimg-col | conv11 | matmul | copy-row | copy-col");
       app.add_option("--size", a->size, "Matrix side N (multiple of 256)")
           ->check(tandem::cli::in_range<std::uint32_t>(256, 65536));
       app.add_option("--profile-fraction", a->fraction, "Share of the blocks profiled by the controller")
           ->check(tandem::cli::in_range(0.001, 0.5))
           ->capture_default_str();
       app.add_option("--window", a->window, "Co-resident blocks for the static selector (default: from the GPU)")
           ->check(tandem::cli::in_range<std::uint32_t>(0, 1 << 20));
       app.add_option("--signal", a->signal,
                      "What the schedule is chosen by: time (the controller, on a minority of the blocks) | energy "
                      "(whole-grid runs, NVML's energy counter; time where it cannot be read) | ipc (instructions per "
                      "active SM cycle from hardware counters, CUPTI; time where they cannot be read)")
           ->check(CLI::IsMember({"time", "energy", "ipc"}))
           ->capture_default_str();
       app.add_option("--energy-span-ms", a->energy_span_ms,
                      "--signal energy: each measurement repeats the grid for at least this long (the energy "
                      "counter moves in coarse steps)")
           ->check(tandem::cli::in_range(1.0, 10000.0))
           ->capture_default_str();
       app.add_flag("--exhaustive", a->exhaustive, "Time the kernel under every schedule first");
       app.add_flag("--explain", a->explain, "Print the controller's profile and the static scores");
       app.add_flag("--json", a->json, "With --show: print the list of [x, y] in launch order");
       app.add_flag("--no-cache", a->no_cache, "Profile even when a choice is cached, and store nothing");
       app.add_flag("--ticket", a->ticket, "Dispatch blocks through an atomic ticket (exact launch order)");
       return [a]() -> int {
         if (!a->show.empty()) {
           if (!a->kernel.empty()) throw UsageError("--show draws a schedule; it takes no --kernel");
           if (a->style == "auto" || a->style == "static")
             throw UsageError("--show needs a concrete --style (sequential, strided:S:G, zigzag, tiled:WxH, hilbert)");
           const Grid g = parse_grid(a->show);
           const Schedule s = parse_schedule(a->style);
           validate(s, g);
           if (a->json) std::cout << order_json(s, g) << '\n';
           else std::cout << draw(s, g);
           return 0;
         }
         if (a->kernel.empty()) throw UsageError("give --kernel NAME --size N, or --show WxH --style S");
         if (a->size == 0) throw UsageError("--kernel needs --size N (a multiple of 256)");
         if (a->json) throw UsageError("--json goes with --show");
         return run_kernel(*a);
       };
     }});

const bool demo = tandem::cli::register_demo_part(
    {40, "block schedules", [] {
       std::cout << "Schedules on a 8x4 grid (launch position of each block):\n";
       for (const char* s : {"sequential", "zigzag", "tiled:4x2", "strided:8:1", "hilbert"})
         std::cout << s << ":\n" << draw(parse_schedule(s), Grid{8, 4});
       bool ok = true;
       const std::uint32_t n = gpu_count() ? 4096 : 2048;
       for (const char* name : {"matmul", "copy-col"}) {
         const KernelSpec& k = kernel_spec(name);
         const auto st = static_select(k, n, candidates(k.grid(n)), default_window());
         std::cout << fmt::format("{} {}^2: static choice {}\n", name, n, to_string(st.best));
         if (gpu_count() == 0) continue;
         KernelRunner r(k, n);
         ControllerOptions o;
         o.use_cache = false;
         o.fallback = st.best;
         o.ranking = static_ranking(st);
         const double seq = r.time_full(Schedule::sequential());
         const auto want = r.output();
         r.poison_output();
         const auto res = run_controlled(r, o);
         const bool same = r.output() == want;
         ok &= same;
         std::cout << fmt::format(
             "{} on gpu0: controller chose {} ({}), total {} incl. profiling {}; sequential {}; "
             "output {}\n",
             name, to_string(res.chosen), res.source, human_seconds(res.total_seconds),
             human_seconds(res.profile_seconds), human_seconds(seq),
             same ? "identical to sequential" : "DIFFERS from sequential");
       }
       if (gpu_count() == 0) std::cout << "no GPU: kernels not run (the controller's timings need a GPU)\n";
       // The orders themselves are checked here too (cheap): every drawn schedule is a bijection.
       for (const auto& s : candidates(Grid{37, 23}, true)) ok &= ranks(s, Grid{37, 23}).size() == 37u * 23u;
       return ok;
     }});

}  // namespace
