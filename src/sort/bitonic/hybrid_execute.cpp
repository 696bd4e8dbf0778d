// The GPU side of the hybrid bitonic driver: the plan executor that runs CPU and GPU at once (the
// launch-shape tuning is in gpu_launch_tuning.cpp). Host code only (the kernels are in
// gpu_steps.cu), compiled by the C++ compiler in CUDA builds.
#if TANDEM_HAS_CUDA
#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sort/bitonic/cpu_steps.hpp"
#include "sort/bitonic/gpu.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::bitonic::detail {

std::string GpuConfig::describe() const {
  return fmt::format("{} kernel, block {} x {} elements/thread (tile {}), {} global steps per pass{}",
                     elems <= 2 ? "scalar" : "vector", block, elems, block * elems, fuse,
                     sm_limit > 0 ? fmt::format(", grid limited to {} blocks (bitonic.gpu_sm_limit)", sm_limit) : "");
}

nlohmann::json to_json(const GpuConfig& c) {
  return {{"block", c.block}, {"elems", c.elems}, {"fuse", c.fuse}, {"sm_limit", c.sm_limit}, {"device", c.device}};
}

// Chunks of the overlapped copies: 8 for arrays of 2^20 and more, none below.
int chunk_log2(std::uint64_t P) {
  const int lg = ceil_log2(P);
  return lg >= 20 ? lg - 3 : 0;
}

namespace {

// The CPU+GPU executor's stages: the device buffer, then per run of the plan the copies and steps
// where the run says (both devices at once, the GPU alone with overlapped copies, or the CPU
// alone), and the copy home.
template <class U>
class HybridExecutor {
 public:
  HybridExecutor(U* host, const Plan& plan, const GpuConfig& cfg, int threads, Report& r)
      : host_(host),
        plan_(plan),
        cfg_(cfg),
        threads_(threads),
        r_(r),
        P_(plan.padded()),
        c_(plan.devices.at(0).count),
        gpu_name_(fmt::format("gpu{}", cfg.device)) {}

  void run() {
    const int last = step_count(plan_.log2n);
    if (last == 0) return;
    const auto runs = plan_.runs();
    const bool cpu_only = std::all_of(runs.begin(), runs.end(), [](const PlanRun& x) { return x.mode == 0; });
    if (cpu_only) {
      Stopwatch w;
      cpu_sort(host_, P_, threads_);
      r_.add(fmt::format("steps 1-{}", last), "cpu", w.seconds(), fmt::format("{} words, {}", P_, cpu_simd()));
      return;
    }
    const gpu::DeviceGuard guard(cfg_.device);
    const auto [free_b, total_b] = gpu::memory_info();
    (void)total_b;
    if (P_ * W > free_b)
      throw OutOfMemoryError(
          fmt::format("bitonic sort: {} on the GPU but {} free", human_bytes(P_ * W), human_bytes(free_b)));
    d_ = gpu::DeviceBuffer<U>(P_);
    d_.poison();
    cs_.emplace();
    xs_.emplace();
    for (const auto& run : runs) execute(run);
    copy_home();
  }

 private:
  static constexpr std::size_t W = sizeof(U);
  enum class Loc { host, split, gpu };  // where the data are; split: the CPU share on the host, the rest on the GPU

  struct RunTimes {
    gpu::Event g0, g1, x0, x1;
    double cpu_s{0}, gpu_s{0}, copy_s{0};
  };

  void h2d(std::uint64_t a, std::uint64_t b, cudaStream_t s) {
    if (b > a) TANDEM_CUDA(cudaMemcpyAsync(d_.data() + a, host_ + a, (b - a) * W, cudaMemcpyHostToDevice, s));
  }
  void d2h(std::uint64_t a, std::uint64_t b, cudaStream_t s) {
    if (b > a) TANDEM_CUDA(cudaMemcpyAsync(host_ + a, d_.data() + a, (b - a) * W, cudaMemcpyDeviceToHost, s));
  }

  void execute(const PlanRun& run) {
    Stopwatch wall;
    RunTimes t;
    if (run.mode == kConcurrent) {
      run_concurrent(run, t);
      r_.add(fmt::format("steps {}-{} concurrent", run.first, run.last), "cpu+" + gpu_name_, wall.seconds(),
             fmt::format("CPU {} on {} | GPU {} on {}", human_seconds(t.cpu_s), c_, human_seconds(t.gpu_s), P_ - c_));
    } else if (run.mode == 1) {
      run_on_gpu(run, t);
      r_.add(fmt::format("steps {}-{}", run.first, run.last), gpu_name_, wall.seconds(),
             fmt::format("GPU {} on {}, copy in {}", human_seconds(t.gpu_s), P_, human_seconds(t.copy_s)));
    } else {
      run_on_cpu(run, t);
      r_.add(fmt::format("steps {}-{}", run.first, run.last), "cpu", wall.seconds(),
             fmt::format("CPU {} on {}, copy in {}", human_seconds(t.cpu_s), P_, human_seconds(t.copy_s)));
    }
    copy_total_ += t.copy_s;
    jr_.push_back({{"first", run.first},
                   {"last", run.last},
                   {"mode", plan_.mode_name(run.mode)},
                   {"cpu_s", t.cpu_s},
                   {"gpu_s", t.gpu_s},
                   {"copy_s", t.copy_s},
                   {"wall_s", wall.seconds()}});
  }

  // The GPU needs [c, P) on the device, the CPU [0, c) on the host.
  void run_concurrent(const PlanRun& run, RunTimes& t) {
    t.x0.record(*xs_);
    if (where_ == Loc::host) h2d(c_, P_, *cs_);  // the GPU's steps queue behind its own share
    if (where_ == Loc::gpu) d2h(0, c_, *xs_);    // the CPU share comes back while the GPU computes
    t.x1.record(*xs_);
    t.g0.record(*cs_);
    gpu_steps(d_.data(), c_, P_, run.first, run.last, cfg_, cs_->get());
    t.g1.record(*cs_);
    t.x1.sync();
    Stopwatch cw;
    cpu_steps(host_, 0, c_, run.first, run.last, threads_);
    t.cpu_s = cw.seconds();
    t.g1.sync();
    t.gpu_s = t.g1.seconds_since(t.g0);
    t.copy_s = t.x1.seconds_since(t.x0);
    where_ = Loc::split;
  }

  // Gathered on the GPU. Overlap: the input arrives in chunks and each chunk is sorted on its own
  // (steps of its subsets) while the next one is copied; at the end, the last steps (strides
  // within a chunk) run chunk by chunk and each chunk goes back as soon as it is done.
  void run_on_gpu(const PlanRun& run, RunTimes& t) {
    t.x0.record(*cs_);
    int first = run.first, stop = run.last;
    const int lq = chunk_log2(P_);
    const int local_first = step_count(lq) + 1;         // steps after the chunk sorts
    const int tail = step_count(plan_.log2n) - lq + 1;  // last subset, strides < chunk
    const bool pipe_in = where_ == Loc::host && run.first == 1 && lq > 0 && run.last >= step_count(lq);
    const bool pipe_out = run.last == step_count(plan_.log2n) && lq > 0 && run.first <= tail;
    const std::uint64_t q = std::uint64_t{1} << lq;
    if (pipe_in) {
      for (std::uint64_t a = 0; a < P_; a += q) {
        gpu::Event arrived(false);
        h2d(a, a + q, *xs_);
        arrived.record(*xs_);
        TANDEM_CUDA(cudaStreamWaitEvent(*cs_, arrived.get(), 0));
        gpu_steps(d_.data(), a, a + q, 1, step_count(lq), cfg_, cs_->get());
      }
      first = local_first;
    } else {
      if (where_ == Loc::host) h2d(0, P_, *cs_);
      if (where_ == Loc::split) h2d(0, c_, *cs_);
    }
    t.x1.record(*cs_);
    if (pipe_out) stop = tail - 1;
    if (first <= stop) gpu_steps(d_.data(), 0, P_, first, stop, cfg_, cs_->get());
    if (pipe_out) {
      for (std::uint64_t a = 0; a < P_; a += q) {
        gpu::Event done(false);
        gpu_steps(d_.data(), a, a + q, std::max(tail, first), run.last, cfg_, cs_->get());
        done.record(*cs_);
        TANDEM_CUDA(cudaStreamWaitEvent(*xs_, done.get(), 0));
        d2h(a, a + q, *xs_);
      }
    }
    t.g1.record(*cs_);
    t.g1.sync();
    t.copy_s = pipe_in ? 0 : t.x1.seconds_since(t.x0);
    t.gpu_s = t.g1.seconds_since(pipe_in ? t.x0 : t.x1);
    where_ = pipe_out ? Loc::host : Loc::gpu;
    if (pipe_out) xs_->sync();
  }

  void run_on_cpu(const PlanRun& run, RunTimes& t) {
    t.x0.record(*cs_);
    if (where_ == Loc::gpu) d2h(0, P_, *cs_);
    if (where_ == Loc::split) d2h(c_, P_, *cs_);
    t.x1.record(*cs_);
    t.x1.sync();
    t.copy_s = t.x1.seconds_since(t.x0);
    Stopwatch cw;
    cpu_steps(host_, 0, P_, run.first, run.last, threads_);
    t.cpu_s = cw.seconds();
    where_ = Loc::host;
  }

  void copy_home() {
    Stopwatch back;
    if (where_ == Loc::gpu) d2h(0, P_, *cs_);
    if (where_ == Loc::split) d2h(c_, P_, *cs_);
    cs_->sync();
    xs_->sync();
    r_.add("copy result to host", gpu_name_, back.seconds(), human_bytes(P_ * W));
    r_.details()["runs"] = jr_;
    r_.details()["copy_seconds"] = copy_total_ + back.seconds();
  }

  U* host_;
  const Plan& plan_;
  const GpuConfig& cfg_;
  const int threads_;
  Report& r_;
  const std::uint64_t P_;
  const std::uint64_t c_;  // CPU share: [0, c); GPU: [c, P)
  const std::string gpu_name_;
  gpu::DeviceBuffer<U> d_;
  std::optional<gpu::Stream> cs_, xs_;  // compute, copies (on cfg.device)
  Loc where_{Loc::host};
  double copy_total_{0};
  nlohmann::json jr_ = nlohmann::json::array();
};

}  // namespace

template <class U>
void hybrid_execute(U* host, const Plan& plan, const GpuConfig& cfg, int threads, Report& r) {
  HybridExecutor<U>(host, plan, cfg, threads, r).run();
}

#define TANDEM_HYBRID_GPU(U) template void hybrid_execute<U>(U*, const Plan&, const GpuConfig&, int, Report&);
TANDEM_HYBRID_GPU(std::uint32_t)
TANDEM_HYBRID_GPU(std::uint64_t)
TANDEM_HYBRID_GPU(u128)

}  // namespace tandem::bitonic::detail
#endif  // TANDEM_HAS_CUDA
