// The hybrid CPU+GPU bitonic sort: encode keys into tandem's order, pad to a power of
// two with sentinels, measure (or read) k, plan, execute on the CPU, the GPU or both, decode.
//
// Keys become unsigned words whose order is the key order (descending: complemented). Pairs sort
// (key bits, original index) as one wider word (u64 for 32-bit keys, u128 for 64-bit keys), which
// makes the network stable; values are gathered by index afterwards. Padding words are all ones:
// they sort after every real element (for pairs their index exceeds every real index) and are
// dropped before decoding, so they never reach the output.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "sort/bitonic/cpu_steps.hpp"
#include "sort/bitonic/gpu.hpp"
#include "sort/bitonic/plan_edits.hpp"
#include "tandem/core/calibrate.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/sort/bitonic_affinity.hpp"
#include "tandem/sort/bitonic_plan.hpp"
#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#endif

namespace tandem::bitonic {
namespace {

using detail::u128;

#if TANDEM_HAS_CUDA
// One pinned block kept between sorts: pinning costs ~40 ms per GiB, more than a GPU sort of it.
struct PinnedCache {
  std::mutex m;
  gpu::PinnedBuffer<unsigned char> buf;
  bool busy{false};
};
PinnedCache& pinned_cache() {
  static PinnedCache c;
  return c;
}
#endif

// The padded working array: pinned when a GPU will copy it, else ordinary memory.
template <class U>
class WorkBuffer {
 public:
  WorkBuffer(std::uint64_t n, bool pinned, Report& r) : n_(n) {
#if TANDEM_HAS_CUDA
    if (pinned && n) {
      auto& c = pinned_cache();
      std::lock_guard<std::mutex> lock(c.m);
      if (!c.busy) {
        try {
          if (c.buf.bytes() < n * sizeof(U)) {
            c.buf = {};  // frees the old block before pinning the larger one
            c.buf = gpu::PinnedBuffer<unsigned char>(n * sizeof(U));
          }
          c.busy = true;
          p_ = reinterpret_cast<U*>(c.buf.data());
          pinned_ = true;
          return;
        } catch (const OutOfMemoryError&) {
          r.note("pinned host memory unavailable: copies use pageable memory");
        }
      }
    }
#else
    (void)pinned;
    (void)r;
#endif
    v_.resize(n);
    p_ = v_.data();
  }
  ~WorkBuffer() {
#if TANDEM_HAS_CUDA
    if (pinned_) {
      auto& c = pinned_cache();
      std::lock_guard<std::mutex> lock(c.m);
      c.busy = false;
    }
#endif
  }
  WorkBuffer(const WorkBuffer&) = delete;
  WorkBuffer& operator=(const WorkBuffer&) = delete;
  U* data() const { return p_; }
  std::uint64_t size() const { return n_; }

 private:
  std::uint64_t n_;
  U* p_{nullptr};
  bool pinned_{false};
  std::vector<U> v_;
};

template <class U>
std::string word_name() {
  if constexpr (sizeof(U) == 4) return "u32";
  else if constexpr (sizeof(U) == 8) return "u64";
  else return "u128";
}

struct Decision {
  Plan plan;
  bool use_gpu{false};
  detail::GpuConfig gpu;
  std::vector<detail::GpuConfig> multi;  // several GPU entries: plan devices 1.. run on these
};

struct Capability {
  double k{-1};
  double cpu_step_s{0};  // seconds per element per step
  double gpu_step_s{0};
  std::string source;
};

#if TANDEM_HAS_CUDA
// k = CPU speed / GPU speed, measured on a power-of-two sample of the real input (a tuning set
// smaller than the data) and cached per device pair, word type, size class and SM limit.
template <class U>
Capability measure_k(const U* data, std::uint64_t n_real, std::uint64_t padded, int threads,
                     const detail::GpuConfig& gc, Report& r) {
  const std::string dev = fmt::format("{}+{}/smlimit{}", cpu_key(), gpu_info().at(gc.device).key(), gc.sm_limit);
  const std::string cls = fmt::format("{}/{}/t{}", word_name<U>(), size_class(padded), threads);
  auto parse = [](const nlohmann::json& j) {
    Capability c;
    c.k = positive_field(j, "k");
    c.cpu_step_s = positive_field(j, "cpu_step_s");
    c.gpu_step_s = positive_field(j, "gpu_step_s");
    c.source = "cached";
    return c;
  };
  if (auto c = TuningCache::global().lookup("bitonic.k", dev, cls, parse, &r)) return *c;
  Capability c;
  const std::uint64_t S = std::min<std::uint64_t>(padded, std::uint64_t{1} << 22);
  std::vector<U> sample(S), work(S);
  for (std::uint64_t i = 0; i < S; ++i) sample[i] = data[std::min(n_real - 1, i * n_real / S)];
  const int steps = step_count(ceil_log2(S));
  double t_cpu = std::numeric_limits<double>::max();
  for (int rep = 0; rep < 2; ++rep) {
    std::copy(sample.begin(), sample.end(), work.begin());
    Stopwatch w;
    detail::cpu_sort(work.data(), S, threads);
    t_cpu = std::min(t_cpu, w.seconds());
  }
  const double t_gpu = detail::gpu_time_sort(sample.data(), S, gc);
  c.k = t_gpu / t_cpu;
  c.cpu_step_s = t_cpu / (double(S) * steps);
  c.gpu_step_s = t_gpu / (double(S) * steps);
  c.source = fmt::format("measured on a sample of {} (CPU {}, GPU {})", S, human_seconds(t_cpu), human_seconds(t_gpu));
  TuningCache::global().put("bitonic.k", dev, cls,
                            {{"k", c.k}, {"cpu_step_s", c.cpu_step_s}, {"gpu_step_s", c.gpu_step_s}, {"sample", S}});
  r.add("measure k", fmt::format("cpu+gpu{}", gc.device), t_cpu + t_gpu, c.source);
  return c;
}
#endif

#if TANDEM_HAS_CUDA
// Link bandwidths for the cost model: `tandem calibrate`'s, else an assumption (said so).
CostModel link_model(std::size_t word_bytes, Report& r) {
  CostModel cm;
  cm.element_bytes = word_bytes;
  if (auto bw = cached_bandwidths(&r); bw && bw->pinned_h2d > 0) {
    cm.h2d_bytes_per_s = bw->pinned_h2d;
    cm.d2h_bytes_per_s = bw->pinned_d2h;
  } else {
    cm.h2d_bytes_per_s = cm.d2h_bytes_per_s = 25e9;
    r.note("no calibration cached (run `tandem calibrate`): assuming 25 GB/s each way for the cost model");
  }
  return cm;
}

// Several GPU entries: the CPU and every entry get a share by capability. Each
// CUDA device's launch shape is tuned and its k measured (cached per CPU+GPU pair); entries that
// repeat a device share its speed (each gets the GPU's step time times the number of entries).
template <class U>
void decide_multi(Decision& d, const U* data, std::uint64_t n, std::uint64_t padded, const SortOptions& o, int threads,
                  const std::vector<int>& gpus, Report& r) {
  std::map<int, detail::GpuConfig> cfg;
  std::map<int, Capability> cap;
  std::map<int, int> entries;
  for (int g : gpus) ++entries[g];
  std::string ks;
  for (const auto& [g, count] : entries) {
    detail::GpuConfig want;
    want.sm_limit = o.bitonic.gpu_sm_limit;
    want.device = g;
    std::string tune;
    cfg[g] = detail::gpu_config<U>(padded, want, o.bitonic.tune_signal, &tune, &r);
    if (!tune.empty()) r.note(fmt::format("GPU {} tuning:\n{}", g, tune));
    cap[g] = measure_k(data, n, padded, threads, cfg[g], r);
    ks += fmt::format("{}CUDA {} ({}): k = {:.4g}, {} entr{}", ks.empty() ? "" : "; ", g, gpu_info().at(g).name,
                      cap[g].k, count, count == 1 ? "y" : "ies");
  }
  r.note("k per GPU: " + ks);
  d.use_gpu = true;
  for (int g : gpus) d.multi.push_back(cfg[g]);
  const Capability& first = cap[gpus.front()];
  double cpu_step = first.cpu_step_s;
  if (o.bitonic.k >= 0) cpu_step = o.bitonic.k > 0 ? first.gpu_step_s / o.bitonic.k : 0;
  const bool cpu_on = o.device != Device::gpu && cpu_step > 0;
  CostModel cm = link_model(sizeof(U), r);
  std::vector<DeviceShare> devs{{"cpu", cpu_on ? 1.0 / cpu_step : 0.0, 0, 0}};
  cm.step_seconds = {cpu_on ? cpu_step : 1e30};
  cm.alone_step_seconds = cm.step_seconds;
  cm.gpu_of = {-1};
  for (std::size_t e = 0; e < gpus.size(); ++e) {
    const double step = cap[gpus[e]].gpu_step_s * entries[gpus[e]];  // while the entries run together
    devs.push_back({fmt::format("gpu{}", e), 1.0 / step, 0, 0});
    cm.step_seconds.push_back(step);
    cm.alone_step_seconds.push_back(cap[gpus[e]].gpu_step_s);
    cm.gpu_of.push_back(gpus[e]);
  }
  // GPU-to-GPU links, measured (the slowest pair stands for all): copies on one GPU, peers.
  std::string links;
  double same = 0, peer = 0;
  bool staged = false;
  for (const auto& [a, ca] : entries)
    for (const auto& [b, cb] : entries) {
      if (a == b && ca < 2) continue;  // one entry on this GPU: no copies within it
      if (a > b) continue;
      const double bw = a == b ? detail::gpu_link_bandwidth(a, a)
                               : std::min(detail::gpu_link_bandwidth(a, b), detail::gpu_link_bandwidth(b, a));
      if (a == b) same = same > 0 ? std::min(same, bw) : bw;
      else if (bw <= 0) staged = true;
      else peer = peer > 0 ? std::min(peer, bw) : bw;
      links += fmt::format("{}GPU {} <-> {}: {}", links.empty() ? "" : "; ", a, b,
                           bw > 0 ? human_bytes(std::uint64_t(bw)) + "/s" : std::string("no peer access (staged)"));
    }
  cm.same_gpu_bytes_per_s = same;
  cm.peer_bytes_per_s = staged ? 0 : peer;
  if (!links.empty()) r.note("GPU links: " + links);
  d.plan = make_multi_plan(n, devs, o.bitonic.policy, -1);
  if (o.bitonic.min_interior_run >= 0) {
    apply_min_interior_run(d.plan, o.bitonic.min_interior_run);
  } else {
    // auto may fall back to one device, or leave the CPU out; hybrid and gpu keep every share.
    const bool auto_ = o.device == Device::auto_;
    optimise(d.plan, cm, auto_);
    if (auto_ && cpu_on) {
      auto without = devs;
      without[0].capability = 0;
      Plan q = make_multi_plan(n, without, o.bitonic.policy, -1);
      optimise(q, cm, true);
      const double tq = predict(q, cm).total, tp = predict(d.plan, cm).total;
      if (tq < tp) {
        q.notes.push_back(
            fmt::format("the GPUs without a CPU share: predicted {} vs {}", human_seconds(tq), human_seconds(tp)));
        d.plan = std::move(q);
      }
    }
  }
  for (std::size_t e = 0; e < gpus.size(); ++e)
    d.plan.notes.push_back(fmt::format("gpu{} = CUDA device {}", e, gpus[e]));
  const PlanCost pc = predict(d.plan, cm);
  r.details()["predicted_seconds"] = pc.total;
  r.note(fmt::format("cost model predicts {} ({} compute, {} transfers)", human_seconds(pc.total),
                     human_seconds(pc.compute), human_seconds(pc.transfer)));
}
#endif

template <class U>
Decision decide(const U* data, std::uint64_t n, std::uint64_t padded, const SortOptions& o, int threads,
                const std::vector<int>& gpus, Report& r) {
  Decision d;
  const bool want_gpu = o.device != Device::cpu;
  const bool have_gpu = want_gpu && gpu_count() > 0;
  if (o.device == Device::gpu && !have_gpu)
    throw NoDeviceError(TANDEM_HAS_CUDA ? "bitonic sort: device = gpu but no usable GPU"
                                        : "bitonic sort: device = gpu but this build has no CUDA");
  const bool over_limit = o.gpu_memory_limit > 0 && padded * sizeof(U) > o.gpu_memory_limit;
  if (have_gpu && over_limit) {
    if (o.device == Device::gpu)
      throw UsageError(fmt::format("bitonic sort: {} of keys exceed gpu_memory_limit = {}",
                                   human_bytes(padded * sizeof(U)), human_bytes(o.gpu_memory_limit)));
    r.note(fmt::format("{} exceed the GPU memory limit {}: the CPU sorts alone", human_bytes(padded * sizeof(U)),
                       human_bytes(o.gpu_memory_limit)));
  }
  if (!have_gpu || over_limit) {
    if (o.device == Device::hybrid && !have_gpu) r.note("no usable GPU: the hybrid sort runs on the CPU alone");
    if (!gpus.empty()) r.notice(fmt::format("gpus = {} not used: the CPU sorts alone", fmt::join(gpus, ",")));
    d.plan = make_plan(n, std::numeric_limits<double>::infinity(), o.bitonic.policy, o.bitonic.min_interior_run);
    d.plan.decided_by = have_gpu ? "GPU memory limit" : "no GPU";
    return d;
  }
#if TANDEM_HAS_CUDA
  for (int g : gpus)
    if (g < 0 || g >= gpu_count())
      throw UsageError(fmt::format("bitonic sort: GPU {} does not exist ({} usable GPU{})", g, gpu_count(),
                                   gpu_count() == 1 ? "" : "s"));
  if (gpus.size() >= 2) {
    decide_multi(d, data, n, padded, o, threads, gpus, r);
    return d;
  }
  detail::GpuConfig want;
  want.sm_limit = o.bitonic.gpu_sm_limit;
  want.device = gpus.empty() ? 0 : gpus.front();
  std::string tune;
  d.gpu = detail::gpu_config<U>(padded, want, o.bitonic.tune_signal, &tune, &r);
  if (!tune.empty()) r.note("GPU tuning:\n" + tune);
  d.use_gpu = true;
  if (o.device == Device::gpu) {
    d.plan = make_plan(n, 0.0, o.bitonic.policy, o.bitonic.min_interior_run);
    d.plan.decided_by = "device = gpu";
    return d;
  }
  if (o.bitonic.k >= 0 && o.bitonic.min_interior_run >= 0) {  // k given and the rule decides: nothing to measure
    d.plan = make_plan(n, o.bitonic.k, o.bitonic.policy, o.bitonic.min_interior_run);
    r.note(fmt::format("k = {:.4g} (given)", o.bitonic.k));
    return d;
  }
  Capability cap = measure_k(data, n, padded, threads, d.gpu, r);
  if (o.bitonic.k >= 0) {  // k given: keep the measured GPU step time, scale the CPU's to match
    cap.k = o.bitonic.k;
    cap.cpu_step_s = o.bitonic.k > 0 ? cap.gpu_step_s / o.bitonic.k : 1.0;
    cap.source = "given; GPU step time measured";
  }
  CostModel cm = link_model(sizeof(U), r);
  cm.step_seconds = {cap.cpu_step_s, cap.gpu_step_s};
  r.note(fmt::format("k = {:.4g} ({})", cap.k, cap.source));
  d.plan = make_plan(n, cap.k, o.bitonic.policy, -1);
  if (o.bitonic.min_interior_run >= 0) {
    apply_min_interior_run(d.plan, o.bitonic.min_interior_run);
  } else {
    // auto: the model may decline co-execution; hybrid asked for explicitly keeps the split.
    optimise(d.plan, cm, o.device != Device::hybrid);
  }
  const PlanCost pc = predict(d.plan, cm);
  r.details()["predicted_seconds"] = pc.total;
  r.note(fmt::format("cost model predicts {} ({} compute, {} transfers)", human_seconds(pc.total),
                     human_seconds(pc.compute), human_seconds(pc.transfer)));
#else
  (void)data;
  (void)threads;
  (void)padded;
  (void)gpus;
#endif
  return d;
}

// CPU thread tuning: asked for more threads than physical cores, time thread
// counts 1..cores (powers of two and the core count) on a sample and keep the fastest (cached).
template <class U>
int cpu_threads(const U* data, std::uint64_t padded, int asked, Report& r) {
  const int cores = std::max(1, cpu_info().physical_cores);
  if (asked <= cores) return asked;
  const std::string cls = fmt::format("{}/{}", word_name<U>(), size_class(padded));
  auto parse = [cores](const nlohmann::json& j) {
    const int t = positive_field<int>(j, "threads");
    if (t > cores) throw std::out_of_range(fmt::format("threads {} outside 1..{}", t, cores));
    return t;
  };
  if (auto t = TuningCache::global().lookup("bitonic.cpu_threads", cpu_key(), cls, parse, &r)) {
    r.note(fmt::format("{} threads asked, {} physical cores: using {} (tuned, cached)", asked, cores, *t));
    return *t;
  }
  const std::uint64_t S = std::min<std::uint64_t>(padded, std::uint64_t{1} << 18);
  std::vector<U> sample(data, data + S), work(S);
  std::vector<Candidate> cands;
  for (auto t : geometric(1, cores)) cands.push_back({fmt::format("threads={}", t), {{"threads", t}}});
  const TuneResult tr = Tuner().repetitions(3).run(cands, [&](const Candidate& c) {
    std::copy(sample.begin(), sample.end(), work.begin());
    Stopwatch w;
    detail::cpu_sort(work.data(), S, c.params.at("threads").get<int>());
    return w.seconds();
  });
  const int best = tr.winner().candidate.params.at("threads").get<int>();
  TuningCache::global().put("bitonic.cpu_threads", cpu_key(), cls, {{"threads", best}, {"results", tr.to_json()}});
  r.note(fmt::format("{} threads asked, {} physical cores: thread counts tuned on {} words:\n{}", asked, cores, S,
                     tr.report()));
  return best;
}

// CPU affinity tuning: no more threads than physical cores: time the mappings of the
// threads onto processing units (unbound, compact, scatter, one per core, NUMA/package spreads
// from the hwloc topology) on a power-of-two sample and keep the fastest (cached by name).
// Mappings the system refuses to bind fail as candidates; "unbound" always runs.
std::string without_final_newline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

template <class U>
AffinityMapping cpu_affinity(const U* data, std::uint64_t padded, int threads, Report& r) {
  const AffinityMapping none{"none", {}};
  if (threads < 2 || padded < (std::uint64_t{1} << 16)) return none;  // one thread or a serial-sized sort
  const auto cands = affinity_candidates(cpu_topology(), threads);
  if (cands.size() < 2) return none;
  const std::uint64_t S = std::min<std::uint64_t>(padded, std::uint64_t{1} << 20);
  const std::string cls = fmt::format("{}/{}/t{}", word_name<U>(), size_class(S), threads);
  auto parse = [](const nlohmann::json& j) {
    return std::pair{j.at("mapping").get<std::string>(), j.at("report").get<std::string>()};
  };
  if (auto j = TuningCache::global().lookup("bitonic.cpu_affinity", cpu_key(), cls, parse, &r)) {
    for (const auto& c : cands)  // a mapping this machine no longer offers is measured again
      if (c.name == j->first) {
        r.note(fmt::format("CPU affinity {} (tuned on {} words, cached); candidates:\n{}", c.describe(), S,
                           without_final_newline(j->second)));
        return c;
      }
  }
  std::vector<U> sample(data, data + S), work(S);
  std::vector<Candidate> cc;
  for (std::size_t i = 0; i < cands.size(); ++i) cc.push_back({cands[i].name, {{"index", i}}});
  const TuneResult tr = Tuner().repetitions(3).run(cc, [&](const Candidate& c) {
    const AffinityScope bind(cands[c.params.at("index").get<std::size_t>()], threads);
    if (!bind.ok()) throw std::runtime_error(bind.error());
    std::copy(sample.begin(), sample.end(), work.begin());
    Stopwatch w;
    detail::cpu_sort(work.data(), S, threads);
    return w.seconds();
  });
  const AffinityMapping& best = cands.at(tr.winner().candidate.params.at("index").get<std::size_t>());
  TuningCache::global().put("bitonic.cpu_affinity", cpu_key(), cls,
                            {{"mapping", best.name}, {"report", tr.report()}, {"results", tr.to_json()}});
  r.note(fmt::format("CPU affinity {} (tuned on {} words, {} threads); candidates:\n{}", best.describe(), S, threads,
                     without_final_newline(tr.report())));
  return best;
}

// Sorts the encoded, padded words in place and fills the report.
template <class U>
void run_words(U* w, std::uint64_t n, std::uint64_t padded, const SortOptions& o, const std::vector<int>& gpus,
               Report& r) {
  const int asked = o.threads > 0 ? o.threads : default_threads();
  const int threads = cpu_threads(w, padded, asked, r);
  // Oversubscribed: the thread count was tuned instead; else the mapping of the threads is.
  const bool cpu_idle = o.device == Device::gpu && gpu_count() > 0;
  const bool may_bind = !cpu_idle && asked <= std::max(1, cpu_info().physical_cores);
  r.details()["cpu_affinity"] = to_json(AffinityMapping{"none", {}});
  Decision d = decide(w, n, padded, o, threads, gpus, r);
  // The mapping is looked up and the threads bound only when the CPU runs steps: a GPU-only plan
  // pays for neither (the cache lookup and the binding's two parallel regions cost ~1 ms at 2^22).
  std::optional<AffinityScope> bind;
  auto bind_cpu = [&] {
    if (bind || !may_bind) return;
    const AffinityMapping aff = cpu_affinity(w, padded, threads, r);
    r.details()["cpu_affinity"] = to_json(aff);
    if (!aff.bound()) return;
    bind.emplace(aff, threads);
    if (!bind->ok()) r.note(fmt::format("CPU affinity {} not applied: {}", aff.name, bind->error()));
  };
  const auto& pd = d.plan.devices;
  if (!d.use_gpu || std::any_of(d.plan.steps.begin(), d.plan.steps.end(), [&](const PlanStep& st) {
        return st.mode == 0 || (st.mode == kConcurrent && !pd.empty() && pd[0].count > 0);
      }))
    bind_cpu();
  r.details()["plan"] = to_json(d.plan);
  std::string shares;
  for (const auto& dv : d.plan.devices)
    shares += fmt::format("{}{} {}", shares.empty() ? "" : " / ", dv.name, dv.count);
  r.note(fmt::format("plan: {} elements of {} (policy {}, k={:.4g}, N={}); concurrent steps {}; decided by {}", shares,
                     padded, d.plan.policy, d.plan.k, d.plan.N, d.plan.concurrent_ranges(), d.plan.decided_by));
  for (const auto& note : d.plan.notes) r.note(note);
  if (!d.use_gpu) {
    Stopwatch sw;
    detail::cpu_sort(w, padded, threads);
    r.add("CPU bitonic network", "cpu", sw.seconds(),
          fmt::format("{} x {}, {} threads, {}", padded, word_name<U>(), threads, detail::cpu_simd()));
    return;
  }
#if TANDEM_HAS_CUDA
  if (d.multi.empty()) {
    r.details()["gpu_config"] = to_json(d.gpu);
    r.note("GPU kernels: " + d.gpu.describe());
  } else {
    r.details()["gpu_config"] = nlohmann::json::array();
    for (std::size_t e = 0; e < d.multi.size(); ++e) {
      r.details()["gpu_config"].push_back(to_json(d.multi[e]));
      r.note(fmt::format("gpu{} kernels (CUDA {}): {}", e, d.multi[e].device, d.multi[e].describe()));
    }
  }
  try {
    if (d.multi.empty()) detail::hybrid_execute(w, d.plan, d.gpu, threads, r);
    else detail::multi_execute(w, d.plan, d.multi, threads, r);
  } catch (const OutOfMemoryError& e) {
    if (o.device == Device::gpu) throw;
    // Nothing ran yet (the device buffer is taken before the first step): the CPU sorts it all.
    bind_cpu();
    r.notice(fmt::format("GPU memory: {}; sorting on the CPU", e.what()));
    Stopwatch sw;
    detail::cpu_sort(w, padded, threads);
    r.add("CPU bitonic network (fallback)", "cpu", sw.seconds(), fmt::format("{} words", padded));
  }
#endif
}

template <class K, class U>
U encode_key(K k, bool descending) {
  const auto b = to_ordered(k);
  return U(descending ? decltype(b)(~b) : b);
}

template <class K>
K decode_key(ordered_bits_t<K> b, bool descending) {
  return from_ordered<K>(descending ? ordered_bits_t<K>(~b) : b);
}

// Fills the padded words (real elements through `word(i)`, then all-ones sentinels) and sorts them.
template <class U, class F>
void encode_and_run(U* p, std::uint64_t n, std::uint64_t padded, const SortOptions& o, const std::vector<int>& gpus,
                    Report& r, int threads, F&& word) {
  Stopwatch sw;
#pragma omp parallel for num_threads(threads) schedule(static) if (n > (1u << 16))
  for (std::int64_t i = 0; i < std::int64_t(padded); ++i) p[i] = std::uint64_t(i) < n ? word(std::uint64_t(i)) : ~U{0};
  r.add("encode + pad", "cpu", sw.seconds(), fmt::format("{} -> {} words ({})", n, padded, word_name<U>()));
  run_words(p, n, padded, o, gpus, r);
}

template <class K>
Report sort_keys(std::span<K> keys, const SortOptions& o, const std::vector<int>& gpus) {
  using U = ordered_bits_t<K>;
  Report r;
  r.operation = "sort (bitonic)";
  const std::uint64_t n = keys.size();
  if (n < 2) {
    r.note(fmt::format("{} key(s): nothing to sort", n));
    return r;
  }
  const std::uint64_t padded = std::uint64_t{1} << ceil_log2(n);
  WorkBuffer<U> w(padded, o.device != Device::cpu && gpu_count() > 0, r);
  const int threads = o.threads > 0 ? o.threads : default_threads();
  U* p = w.data();
  encode_and_run(p, n, padded, o, gpus, r, threads,
                 [&](std::uint64_t i) { return encode_key<K, U>(keys[i], o.descending); });
  Stopwatch sw;
#pragma omp parallel for num_threads(threads) schedule(static) if (n > (1u << 16))
  for (std::int64_t i = 0; i < std::int64_t(n); ++i) keys[i] = decode_key<K>(p[i], o.descending);
  r.add("decode", "cpu", sw.seconds());
  return r;
}

template <class K, class V, class U>
Report sort_pairs_as(std::span<K> keys, std::span<V> values, const SortOptions& o, const std::vector<int>& gpus) {
  constexpr int shift = sizeof(U) * 8 / 2;  // key bits in the high half, index in the low half
  Report r;
  r.operation = "sort pairs (bitonic)";
  const std::uint64_t n = keys.size();
  const std::uint64_t padded = std::uint64_t{1} << ceil_log2(n);
  WorkBuffer<U> w(padded, o.device != Device::cpu && gpu_count() > 0, r);
  const int threads = o.threads > 0 ? o.threads : default_threads();
  U* p = w.data();
  encode_and_run(p, n, padded, o, gpus, r, threads, [&](std::uint64_t i) {
    return U((U(encode_key<K, ordered_bits_t<K>>(keys[i], o.descending)) << shift) | U(i));
  });
  Stopwatch sw;
  std::vector<V> v2(values.begin(), values.end());
  const U low = (U{1} << shift) - 1;
#pragma omp parallel for num_threads(threads) schedule(static) if (n > (1u << 16))
  for (std::int64_t i = 0; i < std::int64_t(n); ++i) {
    keys[i] = decode_key<K>(static_cast<ordered_bits_t<K>>(p[i] >> shift), o.descending);
    values[i] = v2[static_cast<std::uint64_t>(p[i] & low)];
  }
  r.add("decode + gather values", "cpu", sw.seconds());
  return r;
}

}  // namespace

template <class K>
Report sort(std::span<K> keys, const SortOptions& opts) {
  return sort_keys(keys, opts, opts.bitonic.gpus);
}

template <class K>
Report sort(std::span<K> keys, const SortOptions& opts, const std::vector<int>& gpus) {
  return sort_keys(keys, opts, gpus);
}

template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts) {
  return sort_pairs(keys, values, opts, opts.bitonic.gpus);
}

template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts, const std::vector<int>& gpus) {
  if (keys.size() != values.size())
    throw UsageError(fmt::format("bitonic sort_pairs: {} keys but {} values", keys.size(), values.size()));
  if (keys.size() < 2) {
    Report r;
    r.operation = "sort pairs (bitonic)";
    r.note(fmt::format("{} pair(s): nothing to sort", keys.size()));
    return r;
  }
  // 32-bit keys with an index below 2^32 - 1 fit one u64 (the all-ones padding index stays apart).
  if (sizeof(K) == 4 && keys.size() < 0xFFFFFFFFull)
    return sort_pairs_as<K, V, std::uint64_t>(keys, values, opts, gpus);
  return sort_pairs_as<K, V, u128>(keys, values, opts, gpus);
}

#define TANDEM_BITONIC_KEYS(K)                               \
  template Report sort<K>(std::span<K>, const SortOptions&); \
  template Report sort<K>(std::span<K>, const SortOptions&, const std::vector<int>&);
#define TANDEM_BITONIC_PAIRS(K, V)                                                  \
  template Report sort_pairs<K, V>(std::span<K>, std::span<V>, const SortOptions&); \
  template Report sort_pairs<K, V>(std::span<K>, std::span<V>, const SortOptions&, const std::vector<int>&);
#define TANDEM_BITONIC_ALL(K) \
  TANDEM_BITONIC_KEYS(K) TANDEM_BITONIC_PAIRS(K, std::uint32_t) TANDEM_BITONIC_PAIRS(K, std::uint64_t)
TANDEM_BITONIC_ALL(std::uint32_t)
TANDEM_BITONIC_ALL(std::int32_t)
TANDEM_BITONIC_ALL(std::uint64_t)
TANDEM_BITONIC_ALL(std::int64_t)
TANDEM_BITONIC_ALL(float)
TANDEM_BITONIC_ALL(double)

}  // namespace tandem::bitonic
