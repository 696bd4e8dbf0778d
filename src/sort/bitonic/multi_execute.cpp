// The multi-device executor of the hybrid bitonic plan (one or more CPUs and/or one or more
// GPUs): the CPU and every GPU entry sort their shares at the same time in concurrent
// runs; gathered runs move every share to the gathering device (the fastest): peer copies between
// GPUs that can reach each other, device-to-device copies between entries on one GPU, otherwise
// staged through the pinned host array (each share's own region of it, which no other device uses
// at that moment). Host code only, compiled by the C++ compiler in CUDA builds.
//
// Streams: every GPU entry has a compute stream and a copy stream. Copies into an entry go on its
// compute stream, so its steps follow them in stream order; copies to the host go on the source's
// copy stream and the host waits for them before the CPU's steps. Every run ends with all streams
// drained, so the next run's copies never race a kernel.
#if TANDEM_HAS_CUDA
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sort/bitonic/cpu_steps.hpp"
#include "sort/bitonic/gpu.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::bitonic::detail {

bool enable_peer_access(int a, int b) {
  if (a == b) return true;
  static std::mutex m;
  static std::map<std::pair<int, int>, bool> known;
  std::lock_guard<std::mutex> lock(m);
  const std::pair<int, int> key{std::min(a, b), std::max(a, b)};
  if (auto it = known.find(key); it != known.end()) return it->second;
  int ab = 0, ba = 0;
  TANDEM_CUDA(cudaDeviceCanAccessPeer(&ab, a, b));
  TANDEM_CUDA(cudaDeviceCanAccessPeer(&ba, b, a));
  bool ok = ab && ba;
  for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    if (!ok) break;
    const gpu::DeviceGuard g(x);
    const cudaError_t e = cudaDeviceEnablePeerAccess(y, 0);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // not sticky; clear it
      ok = e == cudaErrorPeerAccessAlreadyEnabled;
    }
  }
  known[key] = ok;
  return ok;
}

double gpu_link_bandwidth(int a, int b) {
  if (a != b && !enable_peer_access(a, b)) return 0;
  static std::mutex m;
  static std::map<std::pair<int, int>, double> known;
  std::lock_guard<std::mutex> lock(m);
  if (auto it = known.find({a, b}); it != known.end()) return it->second;
  const std::size_t bytes = std::size_t{64} << 20;
  auto alloc_on = [&](int dev) {
    const gpu::DeviceGuard g(dev);
    return gpu::DeviceBuffer<unsigned char>(bytes);
  };
  gpu::DeviceBuffer<unsigned char> src = alloc_on(a), dst = alloc_on(b);
  const gpu::DeviceGuard g(b);
  gpu::Stream s;
  gpu::Event e0, e1;
  auto copy = [&] {
    if (a == b) TANDEM_CUDA(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s));
    else TANDEM_CUDA(cudaMemcpyPeerAsync(dst.data(), b, src.data(), a, bytes, s));
  };
  copy();  // warm-up
  e0.record(s);
  for (int i = 0; i < 3; ++i) copy();
  e1.record(s);
  e1.sync();
  const double bw = 3.0 * double(bytes) / std::max(1e-9, e1.seconds_since(e0));
  known[{a, b}] = bw;
  return bw;
}

namespace {

constexpr int kHost = -1;  // location of data in host memory

// One GPU entry of the plan: its device, buffer, streams.
template <class U>
struct Entry {
  int device{0};
  GpuConfig cfg;
  std::uint64_t off{0}, count{0};  // its share
  bool full{false};                // holds the whole array (it gathers)
  gpu::DeviceBuffer<U> buf;
  U* base{nullptr};  // base[i] is element i (global indexing) of what it holds
  std::unique_ptr<gpu::Stream> cs, xs;
};

template <class U>
U* shifted(U* p, std::uint64_t off) {
  // Global indexing on a share-sized buffer: base + off is the buffer's first word. The address
  // arithmetic is done on integers (the shifted pointer is never dereferenced outside the share).
  return reinterpret_cast<U*>(reinterpret_cast<std::uintptr_t>(p) - off * sizeof(U));
}

// The executor's stages: the entries' buffers (after checking every GPU can hold its part), the
// copies between locations, then per run of the plan the scatter or gather and the steps, and
// finally the copies home.
template <class U>
class MultiExecutor {
 public:
  MultiExecutor(U* host, const Plan& plan, const std::vector<GpuConfig>& gpus, int threads, Report& r)
      : host_(host),
        plan_(plan),
        gpus_(gpus),
        threads_(threads),
        r_(r),
        P_(plan.padded()),
        nd_(int(plan.devices.size())),
        ne_(int(gpus.size())) {
    if (nd_ != ne_ + 1)
      throw std::logic_error(
          fmt::format("bitonic multi_execute: plan of {} devices for {} GPU entries", nd_, gpus.size()));
  }

  void run() {
    if (step_count(plan_.log2n) == 0) return;
    runs_ = plan_.runs();
    prepare_entries();
    Stopwatch total;
    for (const auto& run : runs_) execute(run);
    copy_home();
    r_.details()["runs"] = jr_;
    r_.details()["gpu_copies"] = {{"peer", peer_copies_}, {"staged", staged_copies_}, {"same_gpu", local_copies_}};
    r_.note(
        fmt::format("multi-device run: {} in all; GPU-to-GPU copies: {} peer, {} staged through host, {} on one "
                    "GPU",
                    human_seconds(total.seconds()), peer_copies_, staged_copies_, local_copies_));
  }

 private:
  static constexpr std::size_t W = sizeof(U);

  // What each entry must hold: the whole array when a run gathers on it, else its share when a
  // concurrent run gives it one. Throws OutOfMemoryError before allocating when a GPU lacks room.
  void prepare_entries() {
    en_.resize(ne_);
    const bool any_concurrent =
        std::any_of(runs_.begin(), runs_.end(), [](const PlanRun& x) { return x.mode == kConcurrent; });
    std::map<int, std::uint64_t> need;  // device -> bytes
    for (int e = 0; e < ne_; ++e) {
      auto& x = en_[e];
      x.device = gpus_[e].device;
      x.cfg = gpus_[e];
      x.off = plan_.devices[e + 1].offset;
      x.count = plan_.devices[e + 1].count;
      x.full = std::any_of(runs_.begin(), runs_.end(), [&](const PlanRun& q) { return q.mode == e + 1; });
      const std::uint64_t words = x.full ? P_ : (any_concurrent ? x.count : 0);
      need[x.device] += words * W;
    }
    for (const auto& [dev, bytes] : need) {
      if (bytes == 0) continue;
      const gpu::DeviceGuard g(dev);
      const auto [free_b, total_b] = gpu::memory_info();
      (void)total_b;
      if (bytes > free_b)
        throw OutOfMemoryError(
            fmt::format("bitonic sort: {} on GPU {} but {} free", human_bytes(bytes), dev, human_bytes(free_b)));
    }
    for (auto& x : en_) {
      const gpu::DeviceGuard g(x.device);
      x.cs = std::make_unique<gpu::Stream>();
      x.xs = std::make_unique<gpu::Stream>();
      const std::uint64_t words = x.full ? P_ : (any_concurrent ? x.count : 0);
      if (words == 0) continue;
      x.buf = gpu::DeviceBuffer<U>(words);
      x.buf.poison(x.cs->get());
      x.base = x.full ? x.buf.data() : shifted(x.buf.data(), x.off);
    }
  }

  // Copies of elements [a, b) between locations (kHost or an entry).
  void h2d(int e, std::uint64_t a, std::uint64_t b) {
    const gpu::DeviceGuard g(en_[e].device);
    TANDEM_CUDA(cudaMemcpyAsync(en_[e].base + a, host_ + a, (b - a) * W, cudaMemcpyHostToDevice, en_[e].cs->get()));
  }
  void d2h(int e, std::uint64_t a, std::uint64_t b) {  // on the source's copy stream
    const gpu::DeviceGuard g(en_[e].device);
    TANDEM_CUDA(cudaMemcpyAsync(host_ + a, en_[e].base + a, (b - a) * W, cudaMemcpyDeviceToHost, en_[e].xs->get()));
  }
  void d2d(int from, int to, std::uint64_t a, std::uint64_t b) {
    auto& s = en_[from];
    auto& d = en_[to];
    const std::size_t bytes = (b - a) * W;
    if (s.device == d.device) {
      const gpu::DeviceGuard g(d.device);
      TANDEM_CUDA(cudaMemcpyAsync(d.base + a, s.base + a, bytes, cudaMemcpyDeviceToDevice, d.cs->get()));
      ++local_copies_;
    } else if (enable_peer_access(s.device, d.device)) {
      const gpu::DeviceGuard g(d.device);
      TANDEM_CUDA(cudaMemcpyPeerAsync(d.base + a, d.device, s.base + a, s.device, bytes, d.cs->get()));
      ++peer_copies_;
    } else {  // staged through the host array's region [a, b), free at this moment
      d2h(from, a, b);
      gpu::Event landed(false);
      {
        const gpu::DeviceGuard g(s.device);
        landed.record(s.xs->get());
      }
      {
        const gpu::DeviceGuard g(d.device);
        TANDEM_CUDA(cudaStreamWaitEvent(d.cs->get(), landed.get(), 0));
      }
      h2d(to, a, b);
      ++staged_copies_;
    }
  }
  // Moves [a, b) from location `from` to location `to` (kHost or an entry).
  void move(int from, int to, std::uint64_t a, std::uint64_t b) {
    if (from == to || b <= a) return;
    if (from == kHost) h2d(to, a, b);
    else if (to == kHost) d2h(from, a, b);
    else d2d(from, to, a, b);
  }
  void sync_all() {
    for (auto& x : en_) {
      x.cs->sync();
      x.xs->sync();
    }
  }
  // Location of a device index of the plan: the CPU is the host, device e + 1 is entry e.
  static int loc(int device) { return device == 0 ? kHost : device - 1; }

  // What one run did, for its Report line.
  struct RunTimes {
    std::vector<std::unique_ptr<gpu::Event>> g0, g1;  // around each entry's steps (when it ran)
    std::vector<bool> ran;
    double cpu_s{0};
  };

  // Entry e's steps of the run on [lo, hi), between its two events.
  void gpu_run(int e, std::uint64_t lo, std::uint64_t hi, const PlanRun& run, RunTimes& rt) {
    auto& x = en_[e];
    const gpu::DeviceGuard g(x.device);
    rt.g0[e]->record(x.cs->get());
    gpu_steps(x.base, lo, hi, run.first, run.last, x.cfg, x.cs->get());
    rt.g1[e]->record(x.cs->get());
    rt.ran[e] = true;
  }

  // Scatter (each device's share comes home, from the gathering location if gathered), then every
  // device sorts its share at once.
  void run_concurrent(const PlanRun& run, RunTimes& rt) {
    if (!split_) {
      for (int d = 0; d < nd_; ++d) {
        const auto& sh = plan_.devices[d];
        if (sh.count) move(where_, loc(d), sh.offset, sh.offset + sh.count);
      }
    }
    for (int e = 0; e < ne_; ++e)
      if (en_[e].count) gpu_run(e, en_[e].off, en_[e].off + en_[e].count, run, rt);
    for (auto& x : en_) x.xs->sync();  // the CPU share has landed
    const std::uint64_t cpu_off = plan_.devices[0].offset, cpu_count = plan_.devices[0].count;
    Stopwatch cw;
    if (cpu_count) cpu_steps(host_, cpu_off, cpu_off + cpu_count, run.first, run.last, threads_);
    rt.cpu_s = cw.seconds();
    sync_all();
    split_ = true;
  }

  // Gather every other share (or the whole array) on the run's device, which runs the steps alone.
  void run_gathered(const PlanRun& run, RunTimes& rt) {
    const int to = loc(run.mode);
    if (split_) {
      for (int d = 0; d < nd_; ++d) {
        const auto& sh = plan_.devices[d];
        if (d != run.mode && sh.count) move(loc(d), to, sh.offset, sh.offset + sh.count);
      }
    } else {
      move(where_, to, 0, P_);
    }
    if (to == kHost) {
      sync_all();
      Stopwatch cw;
      cpu_steps(host_, 0, P_, run.first, run.last, threads_);
      rt.cpu_s = cw.seconds();
    } else {
      gpu_run(to, 0, P_, run, rt);
      sync_all();
    }
    split_ = false;
    where_ = to;
  }

  void execute(const PlanRun& run) {
    Stopwatch wall;
    RunTimes rt;
    rt.g0.resize(ne_);
    rt.g1.resize(ne_);
    rt.ran.assign(ne_, false);
    for (int e = 0; e < ne_; ++e) {
      const gpu::DeviceGuard g(en_[e].device);
      rt.g0[e] = std::make_unique<gpu::Event>();
      rt.g1[e] = std::make_unique<gpu::Event>();
    }
    std::string what;
    if (run.mode == kConcurrent) {
      run_concurrent(run, rt);
      what = "concurrent";
    } else {
      run_gathered(run, rt);
      what = plan_.mode_name(run.mode);
    }
    // Per device: steps (and, for GPUs, the copies queued before them on the same stream).
    nlohmann::json per = nlohmann::json::object();
    std::string detail = fmt::format("cpu {}", human_seconds(rt.cpu_s));
    per["cpu"] = rt.cpu_s;
    for (int e = 0; e < ne_; ++e) {
      if (!rt.ran[e]) continue;
      const gpu::DeviceGuard g(en_[e].device);
      const double t = rt.g1[e]->seconds_since(*rt.g0[e]);
      per[plan_.devices[e + 1].name] = t;
      detail += fmt::format(" | {} (CUDA {}) {}", plan_.devices[e + 1].name, en_[e].device, human_seconds(t));
    }
    r_.add(fmt::format("steps {}-{} {}", run.first, run.last, what), "multi", wall.seconds(), detail);
    jr_.push_back({{"first", run.first},
                   {"last", run.last},
                   {"mode", plan_.mode_name(run.mode)},
                   {"seconds", per},
                   {"wall_s", wall.seconds()}});
  }

  void copy_home() {
    Stopwatch back;
    if (split_) {
      for (int d = 1; d < nd_; ++d) {
        const auto& sh = plan_.devices[d];
        if (sh.count) move(loc(d), kHost, sh.offset, sh.offset + sh.count);
      }
    } else {
      move(where_, kHost, 0, P_);
    }
    sync_all();
    r_.add("copy result to host", "multi", back.seconds(), human_bytes(P_ * W));
  }

  U* host_;
  const Plan& plan_;
  const std::vector<GpuConfig>& gpus_;
  const int threads_;
  Report& r_;
  const std::uint64_t P_;
  const int nd_, ne_;
  std::vector<PlanRun> runs_;
  std::vector<Entry<U>> en_;
  int where_{kHost};   // where the data are: kHost or an entry (everything there) ...
  bool split_{false};  // ... or each share at home (after a concurrent run)
  int peer_copies_{0}, staged_copies_{0}, local_copies_{0};
  nlohmann::json jr_ = nlohmann::json::array();
};

}  // namespace

template <class U>
void multi_execute(U* host, const Plan& plan, const std::vector<GpuConfig>& gpus, int threads, Report& r) {
  MultiExecutor<U>(host, plan, gpus, threads, r).run();
}

#define TANDEM_MULTI_GPU(U) \
  template void multi_execute<U>(U*, const Plan&, const std::vector<GpuConfig>&, int, Report&);
TANDEM_MULTI_GPU(std::uint32_t)
TANDEM_MULTI_GPU(std::uint64_t)
TANDEM_MULTI_GPU(u128)

}  // namespace tandem::bitonic::detail
#endif  // TANDEM_HAS_CUDA
