// The bitonic GPU launch shape (threads per block, elements per thread), tuned by wall time or by
// hardware counters and cached; and the device sort timing k is measured from. The choice from
// the measured numbers is pure code (launch_choice.hpp); this file measures. Host code only,
// compiled by the C++ compiler in CUDA builds.
#if TANDEM_HAS_CUDA
#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/counter_profiler.hpp"
#include "sort/bitonic/cpu_steps.hpp"
#include "sort/bitonic/gpu.hpp"
#include "sort/bitonic/launch_choice.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::bitonic::detail {

namespace {

template <class U>
std::string word_name() {
  if constexpr (sizeof(U) == 4) return "u32";
  else if constexpr (sizeof(U) == 8) return "u64";
  else return "u128";
}

template <class U>
double time_device_sort(U* d, const U* src_d, std::uint64_t padded, const GpuConfig& cfg, cudaStream_t s, int reps) {
  gpu::Event e0, e1;
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    TANDEM_CUDA(cudaMemcpyAsync(d, src_d, padded * sizeof(U), cudaMemcpyDeviceToDevice, s));
    e0.record(s);
    gpu_steps(d, 0, padded, 1, step_count(ceil_log2(padded)), cfg, s);
    e1.record(s);
    e1.sync();
    if (r > 0) t.push_back(e1.seconds_since(e0));  // the first run is the warm-up
  }
  return summarize(t).median;
}

// Blocks under four warps are not measured: gpu_steps runs tiles under 256 elements as register
// passes (no tile kernel at all), and such blocks leave most of an SM's warp schedulers idle.
constexpr int kMinBlock = 128;

struct DeviceLimits {
  int regs_per_block{0}, max_threads{0}, sm_count{0};
  std::size_t shared_optin{0};
};

DeviceLimits device_limits() {
  int dev = 0, regs = 0, threads = 0, sms = 0, optin = 0;
  TANDEM_CUDA(cudaGetDevice(&dev));
  TANDEM_CUDA(cudaDeviceGetAttribute(&regs, cudaDevAttrMaxRegistersPerBlock, dev));
  TANDEM_CUDA(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerBlock, dev));
  TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  TANDEM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return {regs, threads, sms, std::size_t(optin)};
}

// Per vector length, the blocks that the tile kernel's registers, shared memory and the data
// allow (ascending); bounds: one line per vector length for the report.
struct VectorLength {
  int elems{0}, registers{0}, bound_log2{0};
  std::vector<int> blocks;
};

template <class U>
std::vector<VectorLength> vector_lengths(std::uint64_t n, const DeviceLimits& d, std::string& bounds) {
  std::vector<VectorLength> out;
  for (int e : {2, 4, 8, 16}) {
    if (e == 16 && sizeof(U) > 8) continue;
    VectorLength v{e, tile_kernel_registers<U>(e), 0, {}};
    v.bound_log2 = register_bound_log2(d.regs_per_block, v.registers);
    v.blocks = feasible_blocks(block_candidates(d.regs_per_block, v.registers, d.max_threads), e,
                               {d.shared_optin, sizeof(U), n, kMinBlock});
    bounds += fmt::format("  elems {:>2}: {} registers/thread, blocks <= 2^floor(log2({}/{})) = {}; measured: {}\n", e,
                          v.registers, d.regs_per_block, std::max(v.registers, 1), 1 << v.bound_log2,
                          v.blocks.empty() ? std::string("none") : fmt::format("{}", fmt::join(v.blocks, ", ")));
    if (!v.blocks.empty()) out.push_back(std::move(v));
  }
  return out;
}

// Random input on the device and the sort of it that every candidate runs.
template <class U>
class TuningData {
 public:
  explicit TuningData(std::uint64_t n) : n_(n), src_(n), d_(n) {
    std::vector<U> h(n);
    std::mt19937_64 rng(12345);
    for (auto& x : h) x = U(rng());
    TANDEM_CUDA(cudaMemcpyAsync(src_.data(), h.data(), n * sizeof(U), cudaMemcpyHostToDevice, s_));
    s_.sync();
  }
  double seconds(const GpuConfig& g, int reps) { return time_device_sort<U>(d_.data(), src_.data(), n_, g, s_, reps); }
  void restore() { TANDEM_CUDA(cudaMemcpyAsync(d_.data(), src_.data(), n_ * sizeof(U), cudaMemcpyDeviceToDevice, s_)); }
  void sort(const GpuConfig& g) { gpu_steps(d_.data(), 0, n_, 1, step_count(ceil_log2(n_)), g, s_.get()); }

 private:
  std::uint64_t n_;
  gpu::DeviceBuffer<U> src_, d_;
  gpu::Stream s_;
};

GpuConfig with_shape(GpuConfig g, int block, int elems) {
  g.sm_limit = 0;
  g.block = block;
  g.elems = elems;
  return g;
}

// Every feasible (block, elems) pair timed; the fastest kept.
template <class U>
TuneResult tune_by_time(TuningData<U>& data, const std::vector<VectorLength>& lengths, const GpuConfig& want) {
  std::vector<Candidate> cands;
  for (const VectorLength& v : lengths)
    for (int b : v.blocks)
      cands.push_back({fmt::format("block={} elems={}", b, v.elems), {{"block", b}, {"elems", v.elems}}});
  if (cands.empty()) cands.push_back({"block=128 elems=2", {{"block", 128}, {"elems", 2}}});
  return Tuner().repetitions(3).warmup(0).run(cands, [&](const Candidate& c) {
    return data.seconds(with_shape(want, c.params.at("block").get<int>(), c.params.at("elems").get<int>()), 1);
  });
}

struct CounterRow {
  int block{0}, elems{0};
  double seconds{0};
  CounterSample counters;
};

struct CounterTuning {
  std::vector<CounterRow> rows;
  std::size_t by_counters{0}, by_time{0};
  double timing_seconds{0}, counter_seconds{0};
  int passes{0};
  std::string unavailable;  // why counters were not read; empty when they were
};

// One candidate per vector length (its largest block: more threads, fewer barriers per element),
// counters read over one whole sort (restored input before each replay), then timed.
template <class U>
CounterTuning tune_by_counters(TuningData<U>& data, const std::vector<VectorLength>& lengths, const GpuConfig& want,
                               int sm_count) {
  CounterTuning t;
  const std::vector<std::string> names{metric::alu_utilisation, metric::shared_bank_conflicts, metric::sm_cycles};
  std::vector<CounterSample> samples;
  for (const VectorLength& v : lengths) {
    const GpuConfig g = with_shape(want, v.blocks.back(), v.elems);
    const CounterReading r = read_counters(
        names, [&] { data.sort(g); }, [&] { data.restore(); });
    t.counter_seconds += r.seconds;
    t.passes += r.passes;
    if (!r.ok()) {
      t.unavailable = r.unavailable;
      return t;
    }
    const Stopwatch w;
    const double s = data.seconds(g, 3);
    t.timing_seconds += w.seconds();
    samples.push_back({r.values[0], r.values[1], r.values[2], sm_count});
    t.rows.push_back({g.block, g.elems, s, samples.back()});
  }
  const auto pick = pick_by_counters(samples);
  if (!pick) {
    t.unavailable = "no candidate had a usable counter reading (no ALU activity or no cycles counted)";
    return t;
  }
  t.by_counters = *pick;
  for (std::size_t i = 1; i < t.rows.size(); ++i)
    if (t.rows[i].seconds < t.rows[t.by_time].seconds) t.by_time = i;
  return t;
}

std::string counter_table(const CounterTuning& t) {
  std::string s;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const CounterRow& r = t.rows[i];
    const double ratio = counter_ratio(r.counters);
    s += fmt::format(
        "  block={:<4} elems={:<2} {:>10}  ALU {:5.1f} %  bank conflicts {:7.3f} % of SM cycles  "
        "ratio {:>8}{}{}\n",
        r.block, r.elems, human_seconds(r.seconds), r.counters.alu_utilisation_pct, 100 * conflict_share(r.counters),
        std::isinf(ratio) ? std::string("inf") : fmt::format("{:.3g}", ratio), i == t.by_time ? "  <- time" : "",
        i == t.by_counters ? "  <- counters" : "");
  }
  const CounterRow &c = t.rows[t.by_counters], &w = t.rows[t.by_time];
  s += fmt::format("counters pick block={} elems={}; time picks block={} elems={}: {}\n", c.block, c.elems, w.block,
                   w.elems, t.by_counters == t.by_time ? "the same shape" : "different shapes");
  s += fmt::format("tuning cost: counter reading {} ({} replays of the sort), timing {}\n",
                   human_seconds(t.counter_seconds), t.passes, human_seconds(t.timing_seconds));
  return s;
}

nlohmann::json to_json(const CounterTuning& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const CounterRow& r : t.rows)
    rows.push_back({{"block", r.block},
                    {"elems", r.elems},
                    {"seconds", r.seconds},
                    {"alu_utilisation_pct", r.counters.alu_utilisation_pct},
                    {"bank_conflicts", r.counters.bank_conflicts},
                    {"sm_cycles", r.counters.sm_cycles},
                    {"conflict_share", conflict_share(r.counters)}});
  return {{"candidates", rows},
          {"by_counters", t.by_counters},
          {"by_time", t.by_time},
          {"counter_seconds", t.counter_seconds},
          {"timing_seconds", t.timing_seconds},
          {"replays", t.passes}};
}

void notice_once(Report* report, const std::string& text) {
  if (report && std::find(report->notices.begin(), report->notices.end(), text) == report->notices.end())
    report->notice(text);
}

}  // namespace

template <class U>
GpuConfig gpu_config(std::uint64_t padded, GpuConfig want, TuneSignal signal, std::string* tune_report,
                     Report* report) {
  if (want.fuse <= 0) want.fuse = sizeof(U) <= 8 ? 5 : 4;
  if (want.block > 0 && want.elems > 0) return want;
  const gpu::DeviceGuard guard(want.device);
  const auto gi = gpu_info();
  const std::string dev = want.device < int(gi.size()) ? gi[want.device].key() : "gpu";
  // Tuned on up to 2^24 elements; the class is the word type and the (capped) size.
  const std::uint64_t n = std::min<std::uint64_t>(std::max<std::uint64_t>(padded, 1 << 12), std::uint64_t{1} << 24);
  // Tuned on the whole GPU: --gpu-sm-limit runs reuse the shape (tuning on one block would take
  // seconds and is not what the limit is for).
  const std::string cls = fmt::format("{}/{}", word_name<U>(), size_class(n));
  auto parse = [](const nlohmann::json& j) {
    return std::pair{positive_field<int>(j, "block"), positive_field<int>(j, "elems")};
  };
  auto cached = [&](const char* op) {
    if (auto j = TuningCache::global().lookup(op, dev, cls, parse, report)) {
      want.block = j->first;
      want.elems = j->second;
      return true;
    }
    return false;
  };
  if (signal == TuneSignal::counters && cached("bitonic.gpu.counters")) return want;
  const DeviceLimits limits = device_limits();
  std::string bounds;
  const std::vector<VectorLength> lengths = vector_lengths<U>(n, limits, bounds);
  std::optional<TuningData<U>> data;
  if (signal == TuneSignal::counters && !lengths.empty()) {
    data.emplace(n);
    const CounterTuning t = tune_by_counters(*data, lengths, want, limits.sm_count);
    if (t.unavailable.empty()) {
      want.block = t.rows[t.by_counters].block;
      want.elems = t.rows[t.by_counters].elems;
      TuningCache::global().put(
          "bitonic.gpu.counters", dev, cls,
          {{"block", want.block}, {"elems", want.elems}, {"tuned_on", n}, {"results", to_json(t)}});
      if (tune_report) *tune_report = "by hardware counters; register bounds:\n" + bounds + counter_table(t);
      if (report) report->details()["gpu_tuning"] = to_json(t);
      return want;
    }
    notice_once(report,
                "hardware counters could not be read (" + t.unavailable + "): the GPU launch shape is chosen by time");
  }
  if (cached("bitonic.gpu")) return want;
  if (!data) data.emplace(n);
  const TuneResult tr = tune_by_time(*data, lengths, want);
  want.block = tr.winner().candidate.params.at("block").get<int>();
  want.elems = tr.winner().candidate.params.at("elems").get<int>();
  TuningCache::global().put("bitonic.gpu", dev, cls,
                            {{"block", want.block}, {"elems", want.elems}, {"tuned_on", n}, {"results", tr.to_json()}});
  if (tune_report) *tune_report = "by time; register bounds:\n" + bounds + tr.report();
  return want;
}

template <class U>
double gpu_time_sort(const U* host, std::uint64_t padded, const GpuConfig& cfg) {
  const gpu::DeviceGuard guard(cfg.device);
  gpu::DeviceBuffer<U> src(padded), d(padded);
  gpu::Stream s;
  TANDEM_CUDA(cudaMemcpyAsync(src.data(), host, padded * sizeof(U), cudaMemcpyHostToDevice, s));
  return time_device_sort<U>(d.data(), src.data(), padded, cfg, s, 3);
}

#define TANDEM_GPU_LAUNCH_TUNING(U)                                                              \
  template GpuConfig gpu_config<U>(std::uint64_t, GpuConfig, TuneSignal, std::string*, Report*); \
  template double gpu_time_sort<U>(const U*, std::uint64_t, const GpuConfig&);
TANDEM_GPU_LAUNCH_TUNING(std::uint32_t)
TANDEM_GPU_LAUNCH_TUNING(std::uint64_t)
TANDEM_GPU_LAUNCH_TUNING(u128)

}  // namespace tandem::bitonic::detail
#endif  // TANDEM_HAS_CUDA
