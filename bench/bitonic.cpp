// The hybrid bitonic sort, measured:
//  1. GPU kernels on device-resident u32 keys, 2^20..2^28: tandem's fused bitonic against the naive
//     global-memory bitonic (one kernel per step for strides >= 1024, shared memory below), with
//     CUB radix sort and CUB merge sort in the same run. Goal: fused >= 3x naive.
//  2. Host data (2^22..2^24 by default), hybrid vs the better single device (CPU bitonic, GPU bitonic with copies),
//  with k
//     measured on this machine: hybrid must not be slower than the better one by more than 3%.
//  3. Co-execution itself: the GPU limited to a few blocks (--gpu-sm-limit) until k >= 0.3; there
//     the hybrid must take <= 0.9x the better single device and land within 15% of the cost
//     model's prediction (model inputs: the single-device step times and the measured link).
//     Policies a, b, c side by side.
//  4. Several GPU entries: two shares on GPU 0 ({0,0}) and, when present, GPUs 0 and 1 against
//     GPU 0 alone (info lines; --multi-log2, default 2^26).
// Every result is compared with a sorted reference (std::sort on chunks, merged).
//
// Floors (H100/H200, u32): see docs/sort-bitonic.md. A fused pass
// reads and writes the array once; ~50 passes at 2^28 give ~27 ms at ~4 TB/s (~10 Gkeys/s); CUB
// radix needs ~4 passes (~5.4 ms measured). Host data add 2 x 4 bytes per key over PCIe
// (~55 GB/s each way pinned): ~39 ms for 2^28 round trip.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <omp.h>
#include <nlohmann/json.hpp>

#include "event_time.hpp"
#include "harness.hpp"
#include "sort/bitonic/gpu.hpp"
#include "tandem/core/calibrate.hpp"
#include "tandem/core/device.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/sort/bitonic_plan.hpp"
#if TANDEM_HAS_CUDA
#include "kernels/sort/anchors.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif
#include "tandem/core/parallel.hpp"

using namespace tandem;
using tandem::bitonic::ceil_log2;
namespace bd = tandem::bitonic::detail;

namespace {

std::vector<std::uint32_t> random_keys(std::size_t n, std::uint64_t seed) {
  std::vector<std::uint32_t> v(n);
#pragma omp parallel
  {
    std::mt19937_64 rng(seed * 7919 + omp_get_thread_num());
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < std::int64_t(n); ++i) v[i] = std::uint32_t(rng() >> 17);
  }
  return v;
}

// Sorted copy: chunks sorted by threads, then merged pairwise.
std::vector<std::uint32_t> reference_sort(const std::vector<std::uint32_t>& in) {
  std::vector<std::uint32_t> a = in, b(in.size());
  const std::size_t n = a.size();
  int parts = 1;
  while (parts < omp_get_max_threads() && parts < 64) parts *= 2;
  auto bound = [&](int i, int p) { return n * std::size_t(i) / std::size_t(p); };
#pragma omp parallel for schedule(static)
  for (int i = 0; i < parts; ++i) std::sort(a.begin() + bound(i, parts), a.begin() + bound(i + 1, parts));
  for (int p = parts; p > 1; p /= 2) {
#pragma omp parallel for schedule(static)
    for (int i = 0; i < p; i += 2)
      std::merge(a.begin() + bound(i, p), a.begin() + bound(i + 1, p), a.begin() + bound(i + 1, p),
                 a.begin() + bound(i + 2, p), b.begin() + bound(i, p));
    std::swap(a, b);
  }
  return a;
}

#if !TANDEM_HAS_CUDA
// CPU-only build: the CPU bitonic against std::sort, small, so --quick runs anywhere.
int cpu_only(bench::Bench& b) {
  const std::size_t n = std::size_t{1} << int(b.get_int("--max-log2", 20));
  const auto keys = random_keys(n, 1);
  const auto want = reference_sort(keys);
  std::vector<std::uint32_t> v;
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = Device::cpu;
  auto st = b.time([&] {
    v = keys;
    bitonic::sort(std::span<std::uint32_t>(v), o);
  });
  b.record(fmt::format("2^{} u32 on host", ceil_log2(n)), "CPU bitonic", st, double(n), "keys", v == want);
  auto ss = b.time([&] {
    v = keys;
    std::sort(v.begin(), v.end());
  });
  b.record(fmt::format("2^{} u32 on host", ceil_log2(n)), "std::sort", ss, double(n), "keys", v == want);
  b.info("CPU-only build: GPU bitonic benchmarks need CUDA", 0);
  return b.finish();
}
#else
bool device_equals(const std::uint32_t* d, const std::vector<std::uint32_t>& want) {
  std::vector<std::uint32_t> h(want.size());
  TANDEM_CUDA(cudaMemcpy(h.data(), d, want.size() * 4, cudaMemcpyDeviceToHost));
  return h == want;
}

using bench::event_time;

// ---- 1. GPU kernels, device-resident data -----------------------------------------------------
void device_kernels(bench::Bench& b, gpu::Stream& s, int lg, int max_log2) {
  const std::size_t n = std::size_t{1} << lg;
  const auto keys = random_keys(n, lg);
  const auto want = reference_sort(keys);
  const std::string c = fmt::format("2^{} u32 on device", lg);
  gpu::DeviceBuffer<std::uint32_t> src(n), d(n), alt(n);
  TANDEM_CUDA(cudaMemcpy(src.data(), keys.data(), n * 4, cudaMemcpyHostToDevice));
  auto reload = [&] { TANDEM_CUDA(cudaMemcpyAsync(d.data(), src.data(), n * 4, cudaMemcpyDeviceToDevice, s)); };
  auto network = [&](const bd::GpuConfig& cfg) {
    return b.measure([&] {
      reload();
      return event_time(s, [&] { bd::gpu_steps(d.data(), 0, n, 1, bitonic::step_count(lg), cfg, s.get()); });
    });
  };
  const bd::GpuConfig cfg = bd::gpu_config<std::uint32_t>(n, {});
  const Stats fused = network(cfg);
  b.record(c, "tandem bitonic (fused)", fused, double(n), "keys", device_equals(d.data(), want), bd::to_json(cfg));
  // The scalar variant (one comparator per thread per shared step) for the scalar-vs-vector comparison.
  bd::GpuConfig scalar = cfg;
  scalar.elems = 2;
  scalar.block = 1024;
  const Stats sc = network(scalar);
  b.record(c, "tandem bitonic (scalar kernel)", sc, double(n), "keys", device_equals(d.data(), want));
  auto naive = b.measure([&] {
    reload();
    return event_time(s, [&] { bench::naive_bitonic_sort_u32(d.data(), n, s.get()); });
  });
  b.record(c, "naive bitonic (anchor)", naive, double(n), "keys", device_equals(d.data(), want));

  std::size_t tmp_bytes = 0, tmp2 = 0;
  bench::cub_radix_sort_u32(src.data(), d.data(), n, nullptr, &tmp_bytes, s.get());
  bench::cub_merge_sort_u32(d.data(), n, nullptr, &tmp2, s.get());
  gpu::DeviceBuffer<unsigned char> tmp(std::max(tmp_bytes, tmp2));
  auto radix = b.measure([&] {
    return event_time(s, [&] { bench::cub_radix_sort_u32(src.data(), d.data(), n, tmp.data(), &tmp_bytes, s.get()); });
  });
  b.record(c, "CUB radix sort", radix, double(n), "keys", device_equals(d.data(), want));
  auto merge = b.measure([&] {
    reload();
    return event_time(s, [&] { bench::cub_merge_sort_u32(d.data(), n, tmp.data(), &tmp2, s.get()); });
  });
  b.record(c, "CUB merge sort", merge, double(n), "keys", device_equals(d.data(), want));
  const double ratio = naive.median / fused.median;
  if (lg >= 26 || lg == max_log2) b.goal(fmt::format("GPU bitonic / naive bitonic, 2^{}", lg), ratio, 3.0);
  else b.info(fmt::format("GPU bitonic / naive bitonic, 2^{}", lg), ratio, "x");
  b.info(fmt::format("GPU bitonic Gkeys/s, 2^{}", lg), n / fused.median / 1e9);
  b.info(fmt::format("GPU bitonic time / CUB radix time, 2^{}", lg), fused.median / radix.median, "x");
  b.info(fmt::format("GPU bitonic time / CUB merge time, 2^{}", lg), fused.median / merge.median, "x");
}

double host_sort(std::vector<std::uint32_t>& v, const SortOptions& o, Report* rep) {
  Stopwatch w;
  Report r = bitonic::sort(std::span<std::uint32_t>(v), o);
  const double t = w.seconds();
  if (rep) *rep = std::move(r);
  return t;
}

// One size of host data: the keys, their sorted reference, and timed sorts of them.
struct HostCase {
  bench::Bench& b;
  int lg;
  std::size_t n;
  std::vector<std::uint32_t> keys, want;
  std::string c;
  HostCase(bench::Bench& b_, int lg_, std::uint64_t seed, const std::string& what)
      : b(b_),
        lg(lg_),
        n(std::size_t{1} << lg_),
        keys(random_keys(n, seed)),
        want(reference_sort(keys)),
        c(fmt::format("2^{} u32 on host{}", lg_, what)) {}
  // The median of the sorts of the keys under o, recorded (and checked) as `name`.
  double timed(const SortOptions& o, const std::string& name, Report* rep = nullptr) {
    std::vector<std::uint32_t> v;
    auto st = b.time([&] {
      v = keys;
      host_sort(v, o, rep);
    });
    b.record(c, name, st, double(n), "keys", v == want);
    return st.median;
  }
};

SortOptions bitonic_on(Device d, int sm_limit = 0) {
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = d;
  o.bitonic.gpu_sm_limit = sm_limit;
  return o;
}

// ---- 2. Host data: hybrid with the real k vs the better single device; returns the CPU's time --
double hybrid_real_k(HostCase& hc) {
  const double t_cpu = hc.timed(bitonic_on(Device::cpu), "CPU bitonic");
  const double t_gpu = hc.timed(bitonic_on(Device::gpu), "GPU bitonic (with copies)");
  Report rep;
  const double t_hyb = hc.timed(bitonic_on(Device::auto_), "hybrid, k measured", &rep);
  const double best = std::min(t_cpu, t_gpu);
  hc.b.goal(fmt::format("hybrid (real k) / best single device, 2^{}", hc.lg), t_hyb / best, 1.03, false);
  for (const auto& note : rep.notes)
    if (note.rfind("k = ", 0) == 0) hc.b.info(fmt::format("{} (2^{})", note.substr(0, note.find(' ', 4)), hc.lg), 0);
  return t_cpu;
}

// ---- 3. co-execution: a GPU limited to a few blocks --------------------------------------------
// The block limit whose k (from the two single-device times) is nearest 1 with k >= 0.3:
// co-execution can at best halve the time at k = 1.
std::pair<int, double> pick_block_limit(HostCase& hc, double t_cpu) {
  int limit = 0;
  double k = 0;
  for (int sm : {16, 8, 4, 2, 1}) {
    const SortOptions g = bitonic_on(Device::gpu, sm);
    std::vector<std::uint32_t> v = hc.keys;
    host_sort(v, g, nullptr);  // warm-up and tuning of this limit
    v = hc.keys;
    const double t = host_sort(v, g, nullptr);
    if (v != hc.want) hc.b.fail(fmt::format("GPU bitonic with --gpu-sm-limit {} is wrong", sm));
    const double ks = t / t_cpu;
    if (limit == 0 || k < 0.3 || std::fabs(std::log(ks)) < std::fabs(std::log(k))) {
      limit = sm;
      k = ks;
    }
    if (ks >= 1.0) break;  // fewer blocks only move k further from 1
  }
  return {limit, k};
}

// The model's inputs: per-element step times from the single-device runs, the link from
// `tandem calibrate` (or measured now). Returns the model and the k it implies.
std::pair<bitonic::CostModel, double> cost_model(HostCase& hc, gpu::Stream& s, const std::optional<Bandwidths>& bw,
                                                 double t_cpu, double t_gpu_l) {
  const std::size_t n = hc.n;
  const int steps = bitonic::step_count(hc.lg);
  bitonic::CostModel cm;
  cm.element_bytes = 4;
  double h2d = bw && bw->pinned_h2d > 0 ? bw->pinned_h2d : 0, d2h = bw && bw->pinned_d2h > 0 ? bw->pinned_d2h : 0;
  if (h2d == 0) {
    gpu::PinnedBuffer<std::uint32_t> p(n);
    gpu::DeviceBuffer<std::uint32_t> dd(n);
    h2d = n * 4.0 /
          event_time(s, [&] { TANDEM_CUDA(cudaMemcpyAsync(dd.data(), p.data(), n * 4, cudaMemcpyHostToDevice, s)); });
    d2h = n * 4.0 /
          event_time(s, [&] { TANDEM_CUDA(cudaMemcpyAsync(p.data(), dd.data(), n * 4, cudaMemcpyDeviceToHost, s)); });
  }
  cm.h2d_bytes_per_s = h2d;
  cm.d2h_bytes_per_s = d2h;
  const double gpu_compute = std::max(1e-9, t_gpu_l - n * 4.0 / h2d - n * 4.0 / d2h);
  cm.step_seconds = {t_cpu / (double(n) * steps), gpu_compute / (double(n) * steps)};
  return {cm, gpu_compute / t_cpu};
}

void coexecution(HostCase& hc, gpu::Stream& s, const std::optional<Bandwidths>& bw, double t_cpu) {
  auto& b = hc.b;
  const auto [limit, k] = pick_block_limit(hc, t_cpu);
  b.info(fmt::format("--gpu-sm-limit chosen (2^{})", hc.lg), limit);
  b.info(fmt::format("k with --gpu-sm-limit {} (2^{})", limit, hc.lg), k);
  const SortOptions g = bitonic_on(Device::gpu, limit);
  const double t_gpu_l = hc.timed(g, fmt::format("GPU bitonic, --gpu-sm-limit {}", limit));
  const double best_l = std::min(t_cpu, t_gpu_l);
  const auto [cm, k_model] = cost_model(hc, s, bw, t_cpu, t_gpu_l);
  double best_policy = 1e30, best_pred = 0;
  for (char pol : {'a', 'b', 'c'}) {
    SortOptions h = g;
    h.device = Device::hybrid;
    h.bitonic.k = k_model;
    h.bitonic.policy = pol;
    h.bitonic.min_interior_run = 0;  // the plan without the short-run rule: the driver and the model run the same plan
    Report hr;
    const double t = hc.timed(h, fmt::format("hybrid policy {}, --gpu-sm-limit {}", pol, limit), &hr);
    const bitonic::Plan plan = bitonic::make_plan(hc.n, k_model, pol, 0);
    const double pred = bitonic::predict(plan, cm).total;
    b.info(fmt::format("policy {} (2^{}): concurrent steps {} | measured {:.2f} ms, model {:.2f} ms", pol, hc.lg,
                       plan.concurrent_ranges(), t * 1e3, pred * 1e3),
           t / best_l, "x best single");
    if (t < best_policy) {
      best_policy = t;
      best_pred = pred;
    }
  }
  b.goal(fmt::format("hybrid / best single device, GPU limited to {} blocks, k={:.2f}, 2^{}", limit, k, hc.lg),
         best_policy / best_l, 0.9, false);
  b.goal(fmt::format("hybrid |measured/predicted - 1|, 2^{}", hc.lg), std::fabs(best_policy / best_pred - 1), 0.15,
         false);
}

// ---- 4. several GPU entries: GPU-only plans on host data ---------------------------------------
// {0, 0}: two shares on GPU 0 (the multi-device driver's overhead on one GPU); {0, 1} when two
// GPUs are present (2 GPUs vs 1: ideally close to 0.5 plus the peer copies of the gathered step).
void several_gpus(bench::Bench& b) {
  const int lg = int(b.get_int("--multi-log2", b.quick() ? 20 : 26));
  HostCase hc(b, lg, 300 + lg, ", GPUs only");
  SortOptions o = bitonic_on(Device::gpu);
  o.bitonic.min_interior_run = 0;  // the plan without the short-run rule: every independent step concurrent
  auto multi = [&](const std::vector<int>& gpus, const std::string& name) {
    std::vector<std::uint32_t> v;
    Report rep;
    auto st = b.time([&] {
      v = hc.keys;
      rep = bitonic::sort(std::span<std::uint32_t>(v), o, gpus);
    });
    b.record(hc.c, name, st, double(hc.n), "keys", v == hc.want);
    return std::pair{st.median, rep};
  };
  const double t1 = multi({0}, "GPU 0").first;
  const double t00 = multi({0, 0}, "2 shares on GPU 0 ({0,0})").first;
  b.info(fmt::format("2 shares on GPU 0 / GPU 0 alone, 2^{} (driver overhead)", hc.lg), t00 / t1, "x");
  if (gpu_count() < 2) {
    b.info("2 GPUs / 1 GPU: one GPU present, skipped", 0);
    return;
  }
  const auto [t01, r01] = multi({0, 1}, "GPUs 0 and 1");
  b.info(fmt::format("2 GPUs / 1 GPU, 2^{}", hc.lg), t01 / t1, "x");
  for (const auto& note : r01.notes)
    if (note.rfind("multi-device run", 0) == 0 || note.rfind("k per GPU", 0) == 0) b.info(note, 0);
  SortOptions h = o;
  h.device = Device::auto_;
  h.bitonic.min_interior_run = -1;  // the cost model decides
  std::vector<std::uint32_t> v = hc.keys;
  const Report rk = bitonic::sort(std::span<std::uint32_t>(v), h, {0, 1});
  if (v != hc.want) b.fail("auto sort on GPUs {0,1} is wrong");
  for (const auto& note : rk.notes)
    if (note.rfind("k per GPU", 0) == 0 || note.rfind("GPU links", 0) == 0 || note.rfind("plan:", 0) == 0)
      b.info(note, 0);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("bitonic", argc, argv);
#if !TANDEM_HAS_CUDA
  return cpu_only(b);
#else
  if (!gpu::available()) {
    b.info("no GPU: bitonic GPU benchmarks skipped", 0);
    return b.finish();
  }
  const int min_log2 = int(b.get_int("--min-log2", 20));
  const int max_log2 = int(b.get_int("--max-log2", b.quick() ? 22 : 28));
  const int step_log2 = int(b.get_int("--step-log2", 2));
  const int hybrid_min = int(b.get_int("--hybrid-min-log2", b.quick() ? 20 : 22));
  const int hybrid_max = int(b.get_int("--hybrid-max-log2", b.quick() ? 20 : 24));
  gpu::Stream s;
  Stopwatch whole;
  for (int lg = min_log2; lg <= max_log2; lg += step_log2) device_kernels(b, s, lg, max_log2);
  const auto bw = cached_bandwidths();
  for (int lg = hybrid_min; lg <= hybrid_max; lg += step_log2) {
    HostCase hc(b, lg, 100 + lg, "");
    const double t_cpu = hybrid_real_k(hc);
    coexecution(hc, s, bw, t_cpu);
  }
  several_gpus(b);
  b.info("bench_bitonic wall seconds", whole.seconds(), "s");
  return b.finish();
#endif
}
