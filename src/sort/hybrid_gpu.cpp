// The GPU side of the hybrid bitonic driver: launch-shape tuning (cached), device sort timing for
// k, and the plan executor that runs CPU and GPU at once. Host code only (the kernels are in
// bitonic_kernels.cu), compiled by the C++ compiler in CUDA builds.
#if TANDEM_HAS_CUDA
#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "sort/bitonic_engine.hpp"
#include "sort/bitonic_gpu.hpp"
#include "tandem/device.hpp"
#include "tandem/format.hpp"
#include "tandem/gpu.hpp"
#include "tandem/timing.hpp"
#include "tandem/tune.hpp"

namespace tandem::bitonic::detail {

std::string GpuConfig::describe() const {
  return fmt::format("{} kernel, block {} x {} elements/thread (tile {}), {} global steps per pass{}",
                     elems <= 2 ? "scalar" : "vector", block, elems, block * elems, fuse,
                     sm_limit > 0 ? fmt::format(", grid limited to {} blocks (gpu_sm_limit)", sm_limit) : "");
}

nlohmann::json to_json(const GpuConfig& c) {
  return {{"block", c.block}, {"elems", c.elems}, {"fuse", c.fuse}, {"sm_limit", c.sm_limit}, {"device", c.device}};
}

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

}  // namespace

template <class U>
GpuConfig gpu_config(std::uint64_t padded, GpuConfig want, std::string* tune_report) {
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
  if (auto j = TuningCache::global().get("bitonic.gpu", dev, cls)) {
    try {
      want.block = j->at("block").get<int>();
      want.elems = j->at("elems").get<int>();
      if (want.block > 0 && want.elems > 0) return want;
    } catch (const std::exception&) {
    }
  }
  // Candidates: block sizes 2^b bounded by the kernel's register limit and the device's shared
  // memory, elements per thread 2, 4, 8 (16 for words up to 8 bytes).
  int dev_id = 0, optin = 0, max_threads = 1024;
  TANDEM_CUDA(cudaGetDevice(&dev_id));
  TANDEM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev_id));
  TANDEM_CUDA(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerBlock, dev_id));
  std::vector<Candidate> cands;
  for (int e : {2, 4, 8, 16}) {
    if (e == 16 && sizeof(U) > 8) continue;
    for (int b = 128; b <= max_threads; b *= 2) {
      if (std::size_t(b) * e * sizeof(U) * 33 / 32 + sizeof(U) > std::size_t(optin)) continue;
      if (std::uint64_t(b) * e > n) continue;
      cands.push_back({fmt::format("block={} elems={}", b, e), {{"block", b}, {"elems", e}}});
    }
  }
  if (cands.empty()) cands.push_back({"block=128 elems=2", {{"block", 128}, {"elems", 2}}});
  std::vector<U> h(n);
  std::mt19937_64 rng(12345);
  for (auto& x : h) x = U(rng());
  gpu::DeviceBuffer<U> src(n), d(n);
  gpu::Stream s;
  TANDEM_CUDA(cudaMemcpyAsync(src.data(), h.data(), n * sizeof(U), cudaMemcpyHostToDevice, s));
  TuneResult tr = Tuner().repetitions(3).warmup(0).run(cands, [&](const Candidate& c) {
    GpuConfig g = want;
    g.sm_limit = 0;
    g.block = c.params.at("block").get<int>();
    g.elems = c.params.at("elems").get<int>();
    return time_device_sort<U>(d.data(), src.data(), n, g, s, 1);
  });
  want.block = tr.winner().candidate.params.at("block").get<int>();
  want.elems = tr.winner().candidate.params.at("elems").get<int>();
  TuningCache::global().put("bitonic.gpu", dev, cls, {{"block", want.block}, {"elems", want.elems}, {"tuned_on", n}, {"results", tr.to_json()}});
  if (tune_report) *tune_report = tr.report();
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

// Chunks of the overlapped copies: 8 for arrays of 2^20 and more, none below.
int chunk_log2(std::uint64_t P) {
  const int lg = ceil_log2(P);
  return lg >= 20 ? lg - 3 : 0;
}

template <class U>
void hybrid_execute(U* host, const Plan& plan, const GpuConfig& cfg, int threads, Report& r) {
  const std::uint64_t P = plan.padded();
  const std::uint64_t c = plan.devices.at(0).count;  // CPU share: [0, c); GPU: [c, P)
  const int last = step_count(plan.log2n);
  if (last == 0) return;
  const auto runs = plan.runs();
  const bool cpu_only = std::all_of(runs.begin(), runs.end(), [](const PlanRun& x) { return x.mode == 0; });
  if (cpu_only) {
    Stopwatch w;
    cpu_sort(host, P, threads);
    r.add(fmt::format("steps 1-{}", last), "cpu", w.seconds(), fmt::format("{} words, {}", P, cpu_simd()));
    return;
  }
  const gpu::DeviceGuard guard(cfg.device);
  const auto [free_b, total_b] = gpu::memory_info();
  (void)total_b;
  if (P * sizeof(U) > free_b)
    throw OutOfMemoryError(fmt::format("bitonic sort: {} on the GPU but {} free", human_bytes(P * sizeof(U)), human_bytes(free_b)));
  gpu::DeviceBuffer<U> d(P);
  d.poison();
  gpu::Stream cs, xs;  // compute, copies
  const std::size_t W = sizeof(U);
  const std::string gpu_name = fmt::format("gpu{}", cfg.device);
  enum class Loc { host, split, gpu } where = Loc::host;
  auto h2d = [&](std::uint64_t a, std::uint64_t b, cudaStream_t s) {
    if (b > a) TANDEM_CUDA(cudaMemcpyAsync(d.data() + a, host + a, (b - a) * W, cudaMemcpyHostToDevice, s));
  };
  auto d2h = [&](std::uint64_t a, std::uint64_t b, cudaStream_t s) {
    if (b > a) TANDEM_CUDA(cudaMemcpyAsync(host + a, d.data() + a, (b - a) * W, cudaMemcpyDeviceToHost, s));
  };
  nlohmann::json jr = nlohmann::json::array();
  double copy_total = 0;
  for (const auto& run : runs) {
    Stopwatch wall;
    gpu::Event g0, g1, x0, x1;
    double cpu_s = 0, gpu_s = 0, copy_s = 0;
    if (run.mode == kConcurrent) {
      // The GPU needs [c, P) on the device, the CPU [0, c) on the host.
      x0.record(xs);
      if (where == Loc::host) h2d(c, P, cs);  // the GPU's steps queue behind its own share
      if (where == Loc::gpu) d2h(0, c, xs);   // the CPU share comes back while the GPU computes
      x1.record(xs);
      g0.record(cs);
      gpu_steps(d.data(), c, P, run.first, run.last, cfg, cs.get());
      g1.record(cs);
      x1.sync();
      Stopwatch cw;
      cpu_steps(host, 0, c, run.first, run.last, threads);
      cpu_s = cw.seconds();
      g1.sync();
      gpu_s = g1.seconds_since(g0);
      copy_s = x1.seconds_since(x0);
      where = Loc::split;
      r.add(fmt::format("steps {}-{} concurrent", run.first, run.last), "cpu+" + gpu_name, wall.seconds(),
            fmt::format("CPU {} on {} | GPU {} on {}", human_seconds(cpu_s), c, human_seconds(gpu_s), P - c));
    } else if (run.mode == 1) {  // gathered on the GPU
      x0.record(cs);
      int first = run.first, stop = run.last;
      // Overlap: the input arrives in chunks and each chunk is sorted on its own (steps of its
      // subsets) while the next one is copied; at the end, the last steps (strides within a chunk)
      // run chunk by chunk and each chunk goes back as soon as it is done.
      const int lq = chunk_log2(P);
      const int local_first = step_count(lq) + 1;             // steps after the chunk sorts
      const int tail = step_count(plan.log2n) - lq + 1;        // last subset, strides < chunk
      const bool pipe_in = where == Loc::host && run.first == 1 && lq > 0 && run.last >= step_count(lq);
      const bool pipe_out = run.last == step_count(plan.log2n) && lq > 0 && run.first <= tail;
      if (pipe_in) {
        const std::uint64_t q = std::uint64_t{1} << lq;
        for (std::uint64_t a = 0; a < P; a += q) {
          gpu::Event arrived(false);
          h2d(a, a + q, xs);
          arrived.record(xs);
          TANDEM_CUDA(cudaStreamWaitEvent(cs, arrived.get(), 0));
          gpu_steps(d.data(), a, a + q, 1, step_count(lq), cfg, cs.get());
        }
        first = local_first;
      } else {
        if (where == Loc::host) h2d(0, P, cs);
        if (where == Loc::split) h2d(0, c, cs);
      }
      x1.record(cs);
      if (pipe_out) stop = tail - 1;
      if (first <= stop) gpu_steps(d.data(), 0, P, first, stop, cfg, cs.get());
      if (pipe_out) {
        const std::uint64_t q = std::uint64_t{1} << lq;
        for (std::uint64_t a = 0; a < P; a += q) {
          gpu::Event done(false);
          gpu_steps(d.data(), a, a + q, std::max(tail, first), run.last, cfg, cs.get());
          done.record(cs);
          TANDEM_CUDA(cudaStreamWaitEvent(xs, done.get(), 0));
          d2h(a, a + q, xs);
        }
      }
      g1.record(cs);
      g1.sync();
      copy_s = pipe_in ? 0 : x1.seconds_since(x0);
      gpu_s = g1.seconds_since(pipe_in ? x0 : x1);
      where = pipe_out ? Loc::host : Loc::gpu;
      if (pipe_out) xs.sync();
      r.add(fmt::format("steps {}-{}", run.first, run.last), gpu_name, wall.seconds(),
            fmt::format("GPU {} on {}, copy in {}", human_seconds(gpu_s), P, human_seconds(copy_s)));
    } else {  // gathered on the CPU
      x0.record(cs);
      if (where == Loc::gpu) d2h(0, P, cs);
      if (where == Loc::split) d2h(c, P, cs);
      x1.record(cs);
      x1.sync();
      copy_s = x1.seconds_since(x0);
      Stopwatch cw;
      cpu_steps(host, 0, P, run.first, run.last, threads);
      cpu_s = cw.seconds();
      where = Loc::host;
      r.add(fmt::format("steps {}-{}", run.first, run.last), "cpu", wall.seconds(),
            fmt::format("CPU {} on {}, copy in {}", human_seconds(cpu_s), P, human_seconds(copy_s)));
    }
    copy_total += copy_s;
    jr.push_back({{"first", run.first}, {"last", run.last}, {"mode", plan.mode_name(run.mode)}, {"cpu_s", cpu_s},
                  {"gpu_s", gpu_s}, {"copy_s", copy_s}, {"wall_s", wall.seconds()}});
  }
  Stopwatch back;
  if (where == Loc::gpu) d2h(0, P, cs);
  if (where == Loc::split) d2h(c, P, cs);
  cs.sync();
  xs.sync();
  r.add("copy result to host", gpu_name, back.seconds(), human_bytes(P * W));
  r.details["runs"] = jr;
  r.details["copy_seconds"] = copy_total + back.seconds();
}

#define TANDEM_HYBRID_GPU(U)                                                                  \
  template GpuConfig gpu_config<U>(std::uint64_t, GpuConfig, std::string*);                  \
  template double gpu_time_sort<U>(const U*, std::uint64_t, const GpuConfig&);               \
  template void hybrid_execute<U>(U*, const Plan&, const GpuConfig&, int, Report&);
TANDEM_HYBRID_GPU(std::uint32_t)
TANDEM_HYBRID_GPU(std::uint64_t)
TANDEM_HYBRID_GPU(u128)

}  // namespace tandem::bitonic::detail
#endif  // TANDEM_HAS_CUDA
