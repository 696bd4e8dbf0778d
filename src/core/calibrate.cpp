#include "tandem/core/calibrate.hpp"

#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tandem/core/device.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/tune.hpp"
#if TANDEM_HAS_CUDA
#include "core/calibrate_kernels.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

namespace tandem {
namespace {

constexpr const char* kOp = "calibrate";

std::string machine_key() {
  const auto g = gpu_info();
  return g.empty() ? "cpu-only" : g.front().key();
}

double rate(std::size_t bytes, const Stats& s) { return s.median > 0 ? static_cast<double>(bytes) / s.median : 0; }

// Pages are touched before timing so that first-touch faults are not measured.
std::vector<char> touched(std::size_t bytes, char v) { return std::vector<char>(bytes, v); }

}  // namespace

Bandwidths calibrate(const CalibrateOptions& opts) {
  Bandwidths b;
  const std::size_t n = std::max<std::size_t>(opts.bytes, 1 << 20);
  const int reps = std::max(1, opts.repetitions);
  b.bytes = n;
  b.threads = std::min(16, default_threads());
  auto src = touched(n, 1);
  auto dst = touched(n, 0);
  b.host_memcpy_1t = rate(n, time_repeated([&] { std::memcpy(dst.data(), src.data(), n); }, reps));
  b.host_memcpy_mt = rate(n, time_repeated([&] { parallel_copy(dst.data(), src.data(), n, b.threads); }, reps));
  b.staging = calibrated_transfer_options();
#if TANDEM_HAS_CUDA
  if (gpu::available()) {
    b.gpu = machine_key();
    gpu::DeviceBuffer<char> d1(n), d2(n);
    gpu::PinnedBuffer<char> p1(n), p2(n);
    std::memset(p1.data(), 1, n);
    std::memset(p2.data(), 0, n);
    gpu::Stream s1, s2;
    auto timed = [&](auto&& f) { return time_repeated([&] { f(); }, reps); };
    b.pinned_h2d = rate(n, timed([&] {
                          TANDEM_CUDA(cudaMemcpyAsync(d1.data(), p1.data(), n, cudaMemcpyHostToDevice, s1));
                          s1.sync();
                        }));
    b.pinned_d2h = rate(n, timed([&] {
                          TANDEM_CUDA(cudaMemcpyAsync(p2.data(), d1.data(), n, cudaMemcpyDeviceToHost, s1));
                          s1.sync();
                        }));
    b.pinned_both = rate(n, timed([&] {
                           TANDEM_CUDA(cudaMemcpyAsync(d1.data(), p1.data(), n, cudaMemcpyHostToDevice, s1));
                           TANDEM_CUDA(cudaMemcpyAsync(p2.data(), d2.data(), n, cudaMemcpyDeviceToHost, s2));
                           s1.sync();
                           s2.sync();
                         }));
    b.pageable_h2d = rate(n, timed([&] { TANDEM_CUDA(cudaMemcpy(d1.data(), src.data(), n, cudaMemcpyHostToDevice)); }));
    b.pageable_d2h = rate(n, timed([&] { TANDEM_CUDA(cudaMemcpy(dst.data(), d1.data(), n, cudaMemcpyDeviceToHost)); }));

    if (opts.tune_staging) {
      std::vector<Candidate> cands;
      for (std::int64_t chunk_mib : {8, 16, 32, 64})
        for (std::int64_t t : geometric(4, std::max(4, std::min(16, default_threads())), 2))
          cands.push_back({fmt::format("chunk={}MiB threads={}", chunk_mib, t),
                           {{"chunk_bytes", chunk_mib << 20}, {"threads", t}}});
      Tuner tuner;
      tuner.repetitions(3);
      auto result = tuner.run(cands, [&](const Candidate& c) {
        TransferOptions o;
        o.chunk_bytes = c.params["chunk_bytes"].get<std::size_t>();
        o.threads = c.params["threads"].get<int>();
        Stopwatch w;
        copy_to_device(d1.data(), src.data(), n, s1, o);
        copy_to_host(dst.data(), d1.data(), n, s1, o);
        return w.seconds();
      });
      b.staging.chunk_bytes = result.winner().candidate.params["chunk_bytes"].get<std::size_t>();
      b.staging.threads = result.winner().candidate.params["threads"].get<int>();
      if (opts.store)
        TuningCache::global().put(
            "transfer.staged", b.gpu, cpu_key(),
            {{"chunk_bytes", b.staging.chunk_bytes}, {"threads", b.staging.threads}, {"tuning", result.to_json()}});
    }
    const TransferOptions o = b.staging;
    b.staged_h2d = rate(n, timed([&] { copy_to_device(d1.data(), src.data(), n, s1, o); }));
    b.staged_d2h = rate(n, timed([&] { copy_to_host(dst.data(), d1.data(), n, s1, o); }));
    TransferOptions half = o;
    half.threads = std::max(1, o.threads / 2);
    b.staged_both = rate(n, timed([&] {
                           std::thread up([&] { copy_to_device(d1.data(), src.data(), n, s1, half); });
                           copy_to_host(dst.data(), d2.data(), n, s2, half);
                           up.join();
                         }));
    b.device_copy = detail::measure_device_copy(n, reps);
    b.pageable_access_h2d = detail::measure_pageable_access(src.data(), n, reps);
    Stopwatch w;
    if (cudaHostRegister(src.data(), n, cudaHostRegisterDefault) == cudaSuccess) {
      b.host_register_s = w.seconds();
      w.reset();
      cudaHostUnregister(src.data());
      b.host_unregister_s = w.seconds();
    } else {
      cudaGetLastError();
    }
  }
#endif
  if (opts.store) {
    nlohmann::json j = b;
    TuningCache::global().put(kOp, machine_key(), cpu_key(), j);
  }
  return b;
}

std::optional<Bandwidths> cached_bandwidths(Report* report) {
  auto parse = [](const nlohmann::json& j) {
    for (const auto& [name, v] : j.items())  // rates, sizes and times: none is negative
      if (v.is_number() && !(v.get<double>() >= 0))
        throw std::out_of_range(fmt::format("{} = {} is negative", name, v.dump()));
    for (const char* count : {"bytes", "threads", "staging_chunk_bytes", "staging_threads"})
      if (j.contains(count) && !j[count].is_number_integer())
        throw std::out_of_range(fmt::format("{} is not an integer", count));
    return j.get<Bandwidths>();
  };
  return TuningCache::global().lookup(kOp, machine_key(), cpu_key(), parse, report);
}

void to_json(nlohmann::json& j, const Bandwidths& b) {
  j = {{"bytes", b.bytes},
       {"threads", b.threads},
       {"host_memcpy_1t", b.host_memcpy_1t},
       {"host_memcpy_mt", b.host_memcpy_mt},
       {"pinned_h2d", b.pinned_h2d},
       {"pinned_d2h", b.pinned_d2h},
       {"pinned_both", b.pinned_both},
       {"pageable_h2d", b.pageable_h2d},
       {"pageable_d2h", b.pageable_d2h},
       {"staged_h2d", b.staged_h2d},
       {"staged_d2h", b.staged_d2h},
       {"staged_both", b.staged_both},
       {"pageable_access_h2d", b.pageable_access_h2d},
       {"device_copy", b.device_copy},
       {"host_register_s", b.host_register_s},
       {"host_unregister_s", b.host_unregister_s},
       {"staging_chunk_bytes", b.staging.chunk_bytes},
       {"staging_threads", b.staging.threads},
       {"gpu", b.gpu}};
}

void from_json(const nlohmann::json& j, Bandwidths& b) {
  b.bytes = j.at("bytes").get<std::size_t>();
  b.threads = j.value("threads", 0);
  b.host_memcpy_1t = j.value("host_memcpy_1t", 0.0);
  b.host_memcpy_mt = j.value("host_memcpy_mt", 0.0);
  b.pinned_h2d = j.value("pinned_h2d", 0.0);
  b.pinned_d2h = j.value("pinned_d2h", 0.0);
  b.pinned_both = j.value("pinned_both", 0.0);
  b.pageable_h2d = j.value("pageable_h2d", 0.0);
  b.pageable_d2h = j.value("pageable_d2h", 0.0);
  b.staged_h2d = j.value("staged_h2d", 0.0);
  b.staged_d2h = j.value("staged_d2h", 0.0);
  b.staged_both = j.value("staged_both", 0.0);
  b.pageable_access_h2d = j.value("pageable_access_h2d", 0.0);
  b.device_copy = j.value("device_copy", 0.0);
  b.host_register_s = j.value("host_register_s", 0.0);
  b.host_unregister_s = j.value("host_unregister_s", 0.0);
  b.staging.chunk_bytes = j.value("staging_chunk_bytes", std::size_t{32} << 20);
  b.staging.threads = j.value("staging_threads", 0);
  b.gpu = j.value("gpu", std::string{});
}

std::string describe(const Bandwidths& b) {
  auto gb = [](double v) { return v > 0 ? fmt::format("{:8.1f} GB/s", v / 1e9) : std::string("       n/a"); };
  std::string s = fmt::format("Bandwidths measured on {} buffers ({} host threads)\n", human_bytes(b.bytes), b.threads);
  s += fmt::format("  host memcpy, 1 thread        {}\n", gb(b.host_memcpy_1t));
  s += fmt::format("  host memcpy, {:2} threads       {}\n", b.threads, gb(b.host_memcpy_mt));
  if (b.gpu.empty()) return s + "  (no GPU: transfer figures need one)\n";
  s += fmt::format("  pinned   H2D / D2H / both    {} {} {}\n", gb(b.pinned_h2d), gb(b.pinned_d2h), gb(b.pinned_both));
  s += fmt::format("  pageable H2D / D2H (driver)  {} {}\n", gb(b.pageable_h2d), gb(b.pageable_d2h));
  s += fmt::format("  staged   H2D / D2H / both    {} {} {}  (chunk {}, {} threads)\n", gb(b.staged_h2d),
                   gb(b.staged_d2h), gb(b.staged_both), human_bytes(b.staging.chunk_bytes), b.staging.threads);
  s += fmt::format("  kernel reading pageable mem  {}\n", gb(b.pageable_access_h2d));
  s += fmt::format("  device copy (read+write)     {}\n", gb(b.device_copy));
  s += fmt::format("  cudaHostRegister / unregister {} / {}\n", human_seconds(b.host_register_s),
                   human_seconds(b.host_unregister_s));
  return s;
}

}  // namespace tandem
