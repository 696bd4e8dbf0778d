// Block schedules on the six benchmark kernels: every schedule timed (exhaustive), the
// controller's choice and its total time including profiling (goal: within 5% of the best
// exhaustive schedule), the static choice and how often it agrees with measurement, and the best
// schedule's speedup over sequential. cuBLAS sgemm is the absolute reference for matmul.
//
// Floors (H100 SXM: ~3.35 TB/s HBM3 in the data sheet, ~3 TB/s reachable for a copy; 67 TFLOP/s
// f32 FMA peak, 50 MB L2):
//   copy-row / copy-col   8 n^2 bytes (read + write)          16384^2: 2.1 GB -> ~0.7 ms
//   intimg-row / -col     8 n^2 bytes at least (the naive carry re-reads ~n/512 x more, mostly
//                         from L2 when blocks sharing it run together) 16384^2: >= 0.7 ms
//   conv11                8 n^2 bytes, 242 n^2 flop            8192^2: 16 GFLOP -> >= 0.25 ms
//   matmul                2 n^3 flop                           4096^2: 137 GFLOP -> >= 2.0 ms
//                         (cuBLAS reaches ~70-80% of it; the simple tiled kernel far less)
// Default: a representative subset (8 cases, well under a minute on an H200: clearly bad schedules
// are timed once, runs over 20 ms three times, outputs compared on the GPU); --full: every kernel
// at 1024^2 .. 16384^2 (minutes); --kernel NAME [--size N]: one kernel (one case); --quick: 512^2 only (and an info
// line without a GPU). Prints a goal line per case, the static selector's agreement with measurement, and "heat|"
// lines: a kernel x schedule table of time relative to sequential (schedules named with W, H for the grid's sides so
// that columns line up across sizes).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include <unistd.h>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/schedule.hpp"
#include "tandem/schedule/kernels.hpp"
#if TANDEM_HAS_CUDA
#include <cublas_v2.h>

#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

using namespace tandem;
using namespace tandem::schedule;

#if TANDEM_HAS_CUDA
namespace {

double cublas_sgemm_seconds(bench::Bench& b, std::uint32_t n, const std::vector<float>& a, const std::vector<float>& bm,
                            const std::vector<float>& ours) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) throw CudaError("cublasCreate failed");
  const std::size_t e = std::size_t(n) * n;
  gpu::DeviceBuffer<float> da(e), db(e), dc(e);
  TANDEM_CUDA(cudaMemcpy(da.data(), a.data(), e * 4, cudaMemcpyHostToDevice));
  TANDEM_CUDA(cudaMemcpy(db.data(), bm.data(), e * 4, cudaMemcpyHostToDevice));
  dc.poison();
  const float one = 1, zero = 0;
  // Row-major C = A B is column-major C^T = B^T A^T.
  auto run = [&] {
    gpu::Event e0, e1;
    e0.record();
    if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(n), int(n), &one, db.data(), int(n), da.data(), int(n),
                    &zero, dc.data(), int(n)) != CUBLAS_STATUS_SUCCESS)
      throw CudaError("cublasSgemm failed");
    e1.record();
    e1.sync();
    return e1.seconds_since(e0);
  };
  const Stats s = b.measure(run);
  std::vector<float> c(e);
  TANDEM_CUDA(cudaMemcpy(c.data(), dc.data(), e * 4, cudaMemcpyDeviceToHost));
  cublasDestroy(h);
  const double err = max_rel_error(c, ours);  // cuBLAS sums in another order: tolerance
  b.record(fmt::format(fmt::runtime("matmul {}"), n), "cuBLAS sgemm (reference)", s, 2.0 * n * n * double(n), "flop",
           err < 1e-3, {{"max_rel_diff_vs_tiled", err}});
  return s.median;
}

}  // namespace
#endif

#if TANDEM_HAS_CUDA
namespace {

// A schedule's name with the grid's sides written as W and H, so that columns of the heat-map
// table line up across grid sizes (strided:512:1 and strided:256:1 are both column-major).
std::string label(const Schedule& s, Grid g) {
  if (s.style == Style::strided) {
    if (s.a == g.w && s.b == 1) return "strided:W:1";
    if (s.b == g.w) return fmt::format(fmt::runtime("strided:{}:W"), s.a);
    if (s.b == 8 && s.a == std::max(1u, g.w / 8)) return "strided:W/8:8";
  }
  if (s.style == Style::tiled && s.b == g.h && s.b != s.a) return fmt::format(fmt::runtime("tiled:{}xH"), s.a);
  return to_string(s);
}

// The cases: every kernel at 512 (--quick), every kernel at every size (--full), else a selection;
// --kernel NAME --size N: that one case.
std::vector<std::pair<std::string, std::uint32_t>> cases_to_run(const bench::Bench& b, const std::string& only) {
  std::vector<std::pair<std::string, std::uint32_t>> cases;
  if (b.quick()) {
    for (const auto& k : kernel_specs()) cases.push_back({k.name, 512});
  } else if (b.has_flag("--full")) {
    for (const auto& k : kernel_specs())
      for (std::uint32_t n : {1024u, 2048u, 4096u, 8192u, 16384u}) cases.push_back({k.name, n});
  } else {
    cases = {{"intimg-row", 8192}, {"intimg-col", 8192}, {"conv11", 8192},    {"matmul", 4096},
             {"matmul", 8192},     {"copy-row", 16384},  {"copy-col", 16384}, {"copy-col", 4096}};
  }
  if (const long long sz = b.get_int("--size", 0); sz > 0 && !only.empty()) cases = {{only, std::uint32_t(sz)}};
  return cases;
}

// Correctness on a small size: every kernel, every schedule against the CPU reference.
void check_small(bench::Bench& b, const std::string& only) {
  for (const auto& k : kernel_specs()) {
    if (!only.empty() && k.name != only) continue;
    const std::uint32_t n = 512;
    KernelRunner r(k, n);
    const auto want = reference(k, n, r.input(0), r.input(1));
    bool ok = true;
    for (const Schedule& s : candidates(r.grid(), true)) {
      r.poison_output();
      r.time_full(s);
      ok &= max_rel_error(r.output(), want) <= 1e-5;
    }
    if (!ok)
      b.fail(fmt::format(fmt::runtime("{} at 512^2 differs from the CPU reference under some schedule"), k.name));
  }
}

// What the cases add up to: the static choice and the controller against the exhaustive best,
// and the heat map of every schedule's time relative to sequential.
struct Summary {
  int agree{0}, near{0}, total_cases{0}, kept_static{0}, profiled{0}, switched_better{0}, switched{0};
  std::vector<std::string> columns;                                         // heat-map columns, first-seen order
  std::vector<std::pair<std::string, std::map<std::string, double>>> heat;  // case -> label -> time / sequential
};

// One case's exhaustive run.
struct Exhaustive {
  std::map<std::string, double> med;  // schedule -> median seconds
  double best{1e30}, seq{0};
  Schedule best_s;
};

// Every schedule, checked against sequential's output on the GPU. A schedule whose first timed
// run is clearly bad (> 1.1x the best so far) is not repeated; long runs (> 20 ms) get 3
// repetitions instead of --reps.
Exhaustive run_exhaustive(bench::Bench& b, KernelRunner& r, const std::string& c, double work, const std::string& unit,
                          Summary& sum) {
  const Grid g = r.grid();
  Exhaustive x;
  sum.heat.push_back({c, {}});
  for (const Schedule& s : candidates(g, true)) {
    r.poison_output();
    r.time_full(s);  // warm-up (and the Hilbert table)
    std::vector<double> samples{r.time_full(s)};
    const int reps = samples[0] > 1.10 * x.best ? 1 : samples[0] > 20e-3 ? std::min(3, b.reps()) : b.reps();
    while (int(samples.size()) < reps) samples.push_back(r.time_full(s));
    const Stats st = summarize(samples);
    bool ok = true;
    if (s == Schedule::sequential()) r.keep_output();
    else ok = r.output_differences() == 0;
    if (!ok) b.fail(fmt::format(fmt::runtime("{} under {} differs from sequential"), c, to_string(s)));
    b.record(c, to_string(s), st, work, unit, ok, {{"label", label(s, g)}});
    x.med[to_string(s)] = st.median;
    if (s == Schedule::sequential()) x.seq = st.median;
    if (st.median < x.best) x.best = st.median, x.best_s = s;
    const std::string l = label(s, g);
    if (std::find(sum.columns.begin(), sum.columns.end(), l) == sum.columns.end()) sum.columns.push_back(l);
    sum.heat.back().second[l] = st.median;
  }
  for (auto& [l, t] : sum.heat.back().second) t /= x.seq;
  return x;
}

// The controller, uncached (every call profiles, then runs the rest under its choice, starting
// from the static choice and profiling the static top few and sequential), then cached (the next
// call runs the whole grid under the stored choice). Returns the uncached runs' last result and
// median time.
std::pair<ControllerResult, double> run_controller(bench::Bench& b, KernelRunner& r, const std::string& c, double work,
                                                   const std::string& unit, const StaticChoice& stc,
                                                   const std::string& cache_path) {
  ControllerOptions o;
  o.use_cache = false;
  o.profile_fraction = b.get_double("--profile-fraction", 0.10);
  o.fallback = stc.best;
  o.ranking = static_ranking(stc);
  ControllerResult last;
  r.poison_output();
  const Stats ctl = b.measure([&] {
    last = run_controlled(r, o);
    return last.total_seconds;
  });
  const bool ctl_ok = r.output_differences() == 0;
  if (!ctl_ok) b.fail(fmt::format(fmt::runtime("{} under the controller differs from sequential"), c));
  b.record(c, "controller (first call, incl. profiling)", ctl, work, unit, ctl_ok,
           {{"chosen", to_string(last.chosen)},
            {"incumbent", to_string(last.incumbent)},
            {"source", last.source},
            {"profile_seconds", last.profile_seconds},
            {"chunks", last.profile.size()},
            {"profiled_blocks", last.profiled_blocks}});
  TuningCache cache(cache_path);
  ControllerOptions oc = o;
  oc.use_cache = true;
  oc.cache = &cache;
  run_controlled(r, oc);
  r.poison_output();
  const Stats cached = b.measure([&] { return run_controlled(r, oc).total_seconds; });
  b.record(c, "controller (cached choice)", cached, work, unit, r.output_differences() == 0);
  return {last, ctl.median};
}

void run_case(bench::Bench& b, const std::string& name, std::uint32_t n, std::uint32_t window,
              const std::string& cache_path, Summary& sum) {
  const KernelSpec& k = kernel_spec(name);
  const std::string c = fmt::format(fmt::runtime("{} {}"), name, n);
  KernelRunner r(k, n);
  const Grid g = r.grid();
  const double work = name == "matmul" ? flops(k, n) : k.min_bytes(n);
  const std::string unit = name == "matmul" ? "flop" : "B";
  Exhaustive x = run_exhaustive(b, r, c, work, unit, sum);
  const auto stc = static_select(k, n, candidates(g, true), window);
  const auto [last, ctl] = run_controller(b, r, c, work, unit, stc, cache_path);
  b.goal(fmt::format(fmt::runtime("controller total / best exhaustive, {}"), c), ctl / x.best, 1.05, false);
  b.info(fmt::format(fmt::runtime("best {} speedup over sequential, {}"), to_string(x.best_s), c), x.seq / x.best, "x");
  const double st_time = x.med.count(to_string(stc.best)) ? x.med[to_string(stc.best)] : 0;
  b.info(fmt::format(fmt::runtime("static choice {} time / best, {}"), to_string(stc.best), c), st_time / x.best, "x");
  b.info(fmt::format(fmt::runtime("controller chose {} ({}), {}"), to_string(last.chosen), last.source, c),
         x.med.count(to_string(last.chosen)) ? x.med[to_string(last.chosen)] / x.best : 0, "x best");
  ++sum.total_cases;
  sum.agree += stc.best == x.best_s;
  sum.near += st_time <= 1.05 * x.best;
  if (last.source == "profiled") {
    ++sum.profiled;
    if (last.chosen == last.incumbent) {
      ++sum.kept_static;
    } else {
      ++sum.switched;
      sum.switched_better += x.med.count(to_string(last.chosen)) && x.med[to_string(last.chosen)] < st_time;
    }
  }
  if (name == "matmul" && n <= 8192) {
    r.time_full(Schedule::sequential());
    const double cb = cublas_sgemm_seconds(b, n, r.input(0), r.input(1), r.output());
    b.info(fmt::format(fmt::runtime("cuBLAS sgemm speedup over the best-scheduled tiled kernel, {}"), c), x.best / cb,
           "x");
  }
}

void print_summary(bench::Bench& b, const Summary& sum) {
  if (!sum.total_cases) return;
  b.info("static choice = best exhaustive schedule (cases)", sum.agree,
         fmt::format(fmt::runtime("of {}"), sum.total_cases));
  b.info("static choice within 5% of the best (cases)", sum.near, fmt::format(fmt::runtime("of {}"), sum.total_cases));
  b.info("profiled cases where measurement kept the static choice", sum.kept_static,
         fmt::format(fmt::runtime("of {}"), sum.profiled));
  b.info("profiled cases that switched, to a schedule faster on the full grid", sum.switched_better,
         fmt::format(fmt::runtime("of {}"), sum.switched));
  // Kernel x schedule: time relative to sequential (the heat map; '-' where a schedule does not fit).
  std::string line = fmt::format("heat|{:<16}", "case \\ schedule");
  for (const auto& l : sum.columns) line += fmt::format("|{:>13}", l);
  std::cout << line << '\n';
  for (const auto& [cs, row] : sum.heat) {
    line = fmt::format("heat|{:<16}", cs);
    for (const auto& l : sum.columns) {
      auto it = row.find(l);
      line += it == row.end() ? fmt::format("|{:>13}", "-") : fmt::format("|{:>13.3f}", it->second);
    }
    std::cout << line << '\n';
  }
}

}  // namespace
#endif

int main(int argc, char** argv) {
  bench::Bench b("schedule", argc, argv);
#if !TANDEM_HAS_CUDA
  b.info("no CUDA in this build: schedule benchmark skipped", 0);
  return b.finish();
#else
  if (!gpu::available()) {
    b.info("no GPU: schedule benchmark skipped (timings need a GPU)", 0);
    return b.finish();
  }
  const std::string only = b.get("--kernel", "");
  const auto cases = cases_to_run(b, only);
  const std::uint32_t window = default_window();
  b.info("co-resident blocks assumed by the static selector", window, "blocks");
  check_small(b, only);
  const std::string cache_path =
      (std::filesystem::temp_directory_path() / fmt::format(fmt::runtime("tandem-bench-schedule-{}.json"), ::getpid()))
          .string();
  Summary sum;
  for (const auto& [name, n] : cases)
    if (only.empty() || name == only) run_case(b, name, n, window, cache_path, sum);
  std::error_code ec;
  std::filesystem::remove(cache_path, ec);
  print_summary(b, sum);
  return b.finish();
#endif
}
