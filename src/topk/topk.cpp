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

}  // namespace

Result query(const Lists& l, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  if (k < 1 || k > l.m)
    throw UsageError(fmt::format("k = {} must be between 1 and the number of objects ({})", k, l.m));
  agg.check(l.n);
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

  // The plan: one algorithm, or NRA with a depth budget and the scan behind it.
  Algo algo = opts.algo;
  Options o = opts;
  bool budgeted = false;
  if (algo == Algo::auto_) {
    Stopwatch w;
    if (l.n == 1) {
      algo = Algo::nra;
      rep.note("auto: one list - NRA reads exactly k entries");
    } else {
      const Estimate e = estimate_overlap(l);
      rep.add("auto: prefix overlap estimate", "cpu", w.seconds(), fmt::format("{} entries of each list", e.prefix));
      rep.details()["estimate"] = {{"prefix", e.prefix},
                                   {"observed_pairs", e.observed},
                                   {"independent_pairs", e.expected},
                                   {"ratio", e.ratio()}};
      if (e.ratio() < kAntiRatio) {
        algo = Algo::scan;
        rep.note(
            fmt::format("auto: scan - the lists look anti-correlated (prefix overlap {:.2f}x of independent lists "
                        "< {}): NRA would read most of every list",
                        e.ratio(), kAntiRatio));
      } else {
        algo = Algo::nra;
        budgeted = true;
        o.max_depth = std::max<std::uint64_t>(k, l.m / 2);
        rep.note(
            fmt::format("auto: NRA with a budget of {} levels, then the scan - prefix overlap {:.2f}x of "
                        "independent lists ({}): NRA should stop early",
                        o.max_depth, e.ratio(), e.ratio() > 3 ? "correlated" : "about independent"));
      }
    }
  }

  Result r;
  auto finish_budget = [&](auto&& run_scan) {
    if (budgeted && !r.stats.finished) {
      absorb(rep, r);
      rep.note("auto: NRA did not stop within its budget; running the full scan");
      r = run_scan();
    }
  };
  if (gpu) {
    try {
      auto d = upload(l, opts.memory, &rep);
      r = run_gpu(algo, *d, k, agg, o);
      finish_budget([&] { return scan_gpu(*d, k, agg, o); });
    } catch (const OutOfMemoryError& e) {
      if (opts.device == Device::gpu) throw;
      rep.note(fmt::format("GPU out of memory ({}); falling back to the CPU", e.what()));
      gpu = false;
    }
  }
  if (!gpu) {
    r = run_cpu(algo, l, k, agg, o);
    finish_budget([&] { return scan_cpu(l, k, agg, o); });
  }
  absorb(rep, r);
  r.report = std::move(rep);
  return r;
}

#if !TANDEM_HAS_CUDA
struct DeviceLists::Impl {};
DeviceLists::DeviceLists(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceLists::~DeviceLists() = default;
std::uint32_t DeviceLists::n() const { return 0; }
std::uint64_t DeviceLists::m() const { return 0; }
Memory DeviceLists::memory() const { return Memory::device; }
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
