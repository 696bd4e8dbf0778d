// tandem::topk::query: checks the request, picks the algorithm (auto: overlap estimate + NRA with a
// depth budget, else the scan) and the device (GPU when usable, CPU fallback with a note).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::topk {

namespace {

// Below this overlap ratio (observed / independent) the lists are anti-correlated: the top objects
// of one list sit low in the others and NRA would read nearly everything.
constexpr double kAntiRatio = 0.3;
// Above this ratio the lists are correlated: NRA stops after a few rounds.

Result run_cpu(Algo algo, const Lists& l, std::uint64_t k, const Aggregate& agg, const Options& o) {
  switch (algo) {
    case Algo::nra: return nra_cpu(l, k, agg, o);
    case Algo::ta: return ta_cpu(l, k, agg, o);
    default: return scan_cpu(l, k, agg, o);
  }
}

Result run_gpu(Algo algo, DeviceLists& d, std::uint64_t k, const Aggregate& agg, const Options& o) {
  switch (algo) {
    case Algo::nra: return nra_gpu(d, k, agg, o);
    case Algo::ta: return ta_gpu(d, k, agg, o);
    default: return scan_gpu(d, k, agg, o);
  }
}

void absorb(Report& into, Result& from) {
  for (auto& s : from.report.stages) into.stages.push_back(s);
  for (auto& n : from.report.notes) into.notes.push_back(n);
  for (auto& [key, v] : from.report.details().items()) into.details()[key] = v;
}

void check_request(std::uint32_t n, std::uint64_t m, std::uint64_t k, const Aggregate& agg) {
  if (k < 1 || k > m) throw UsageError(fmt::format("k = {} must be between 1 and the number of objects ({})", k, m));
  agg.check(n);
}

// The plan: one algorithm, or NRA with a depth budget and the scan behind it (budgeted).
struct Plan {
  Algo algo;
  Options opts;
  bool budgeted{false};
};

// `estimate` is called only when auto needs it (the host path measures it now, the GPU one at upload).
template <class EstimateFn>
Plan plan_query(std::uint32_t n, std::uint64_t m, std::uint64_t k, const Options& opts, EstimateFn estimate,
                Report& rep) {
  Plan p{opts.algo, opts};
  if (p.algo != Algo::auto_) return p;
  if (n == 1) {
    p.algo = Algo::nra;
    rep.note("auto: one list - NRA reads exactly k entries");
    return p;
  }
  Stopwatch w;
  const Estimate e = estimate();
  rep.add("auto: prefix overlap estimate", "cpu", w.seconds(), fmt::format("{} entries of each list", e.prefix));
  rep.details()["estimate"] = {
      {"prefix", e.prefix}, {"observed_pairs", e.observed}, {"independent_pairs", e.expected}, {"ratio", e.ratio()}};
  if (e.ratio() < kAntiRatio) {
    p.algo = Algo::scan;
    rep.note(
        fmt::format("auto: scan - the lists look anti-correlated (prefix overlap {:.2f}x of independent lists "
                    "< {}): NRA would read most of every list",
                    e.ratio(), kAntiRatio));
  } else {
    p.algo = Algo::nra;
    p.budgeted = true;
    p.opts.max_depth = std::max<std::uint64_t>(k, m / 2);
    rep.note(fmt::format(
        "auto: NRA with a budget of {} levels, then the scan - prefix overlap {:.2f}x of "
        "independent lists ({}): NRA should stop early",
        p.opts.max_depth, e.ratio(), e.ratio() > detail::kCorrelatedRatio ? "correlated" : "about independent"));
  }
  return p;
}

// Runs the plan: `run(algo, opts)` on the chosen device; the scan when a budgeted NRA gave up.
template <class RunFn>
Result run_plan(const Plan& p, Report& rep, RunFn run) {
  Result r = run(p.algo, p.opts);
  if (p.budgeted && !r.stats.finished) {
    absorb(rep, r);
    rep.note("auto: NRA did not stop within its budget; running the full scan");
    r = run(Algo::scan, p.opts);
  }
  absorb(rep, r);
  r.report = std::move(rep);
  return r;
}

}  // namespace

Result query(const Lists& l, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  check_request(l.n, l.m, k, agg);
  Report rep;
  rep.operation = "topk";

  bool gpu = false;
  if (opts.device == Device::gpu || opts.device == Device::hybrid) {
    if (gpu_count() == 0)
      throw NoDeviceError(TANDEM_HAS_CUDA ? "device = gpu: no usable GPU" : "device = gpu: this build has no CUDA");
    gpu = true;
  } else if (opts.device == Device::auto_) {
    gpu = gpu_count() > 0;
    if (!gpu) rep.note("device auto: no usable GPU, running on the CPU");
  }

  const Plan plan = plan_query(
      l.n, l.m, k, opts, [&] { return estimate_overlap(l); }, rep);
  if (gpu) {
    try {
      auto d = upload(l, opts.memory, &rep);
      return run_plan(plan, rep, [&](Algo a, const Options& o) { return run_gpu(a, *d, k, agg, o); });
    } catch (const OutOfMemoryError& e) {
      if (opts.device == Device::gpu) throw;
      rep.note(fmt::format("GPU out of memory ({}); falling back to the CPU", e.what()));
    }
  }
  return run_plan(plan, rep, [&](Algo a, const Options& o) { return run_cpu(a, l, k, agg, o); });
}

Result query(DeviceLists& d, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  check_request(d.n(), d.m(), k, agg);
  Report rep;
  rep.operation = "topk";
  if (opts.algo == Algo::auto_ && d.n() > 1 && d.indexed() && d.overlap().ratio() <= detail::kCorrelatedRatio) {
    // Measured on an H100 (10M x 4, k = 100): the indexed scan 0.28 ms against NRA's 2.1 ms on
    // independent lists; on correlated ones NRA stops early (0.32 ms against the scan's 0.43).
    rep.note(
        fmt::format("auto: scan - the lists are indexed by id and not correlated (prefix overlap {:.2f}x of "
                    "independent lists): one pass over n x m floats beats NRA's rounds",
                    d.overlap().ratio()));
    return run_plan(Plan{Algo::scan, opts}, rep, [&](Algo a, const Options& o) { return run_gpu(a, d, k, agg, o); });
  }
  const Plan plan = plan_query(
      d.n(), d.m(), k, opts, [&] { return d.overlap(); }, rep);
  return run_plan(plan, rep, [&](Algo a, const Options& o) { return run_gpu(a, d, k, agg, o); });
}

#if !TANDEM_HAS_CUDA
struct DeviceLists::Impl {};
DeviceLists::DeviceLists(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceLists::~DeviceLists() = default;
std::uint32_t DeviceLists::n() const { return 0; }
std::uint64_t DeviceLists::m() const { return 0; }
Memory DeviceLists::memory() const { return Memory::device; }
Estimate DeviceLists::overlap() const { return {}; }
bool DeviceLists::indexed() const { return false; }
std::unique_ptr<DeviceLists> upload(const Lists&, Memory, Report*) {
  throw NoDeviceError("top-k on the GPU: this build has no CUDA");
}
Result nra_gpu(DeviceLists&, std::uint64_t, const Aggregate&, const Options&) {
  throw NoDeviceError("top-k on the GPU: this build has no CUDA");
}
Result ta_gpu(DeviceLists&, std::uint64_t, const Aggregate&, const Options&) {
  throw NoDeviceError("top-k on the GPU: this build has no CUDA");
}
Result scan_gpu(DeviceLists&, std::uint64_t, const Aggregate&, const Options&) {
  throw NoDeviceError("top-k on the GPU: this build has no CUDA");
}
#endif

}  // namespace tandem::topk
