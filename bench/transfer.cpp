// Host <-> device transfers of a pageable buffer: tandem's staged pipeline against the host's own
// multi-threaded memcpy (the floor for pageable data) and the driver's plain pageable cudaMemcpy;
// pinned buffers through tandem against raw cudaMemcpyAsync.
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/calibrate.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/transfer.hpp"
#if TANDEM_HAS_CUDA
#include "core/calibrate_kernels.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

using namespace tandem;

int main(int argc, char** argv) {
  bench::Bench b("transfer", argc, argv);
  const std::size_t n = std::size_t(b.get_int("--mib", b.quick() ? 64 : 1024)) << 20;
  const int threads = int(b.get_int("--threads", std::min(16, default_threads())));
  std::vector<unsigned char> src(n), dst(n);
  for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
  std::memset(dst.data(), 0, n);
  const std::string c = fmt::format("{} MiB pageable", n >> 20);

  auto memcpy_mt = b.time([&] { parallel_copy(dst.data(), src.data(), n, threads); });
  b.record(c, fmt::format("host memcpy {} threads", threads), memcpy_mt, double(n), "B", dst == src);
  auto memcpy_1 = b.time([&] { std::memcpy(dst.data(), src.data(), n); });
  b.record(c, "host memcpy 1 thread", memcpy_1, double(n), "B", dst == src);
  [[maybe_unused]] const double host_bw = n / memcpy_mt.median;  // read in CUDA builds only
#if TANDEM_HAS_CUDA
  if (!gpu::available()) {
    b.info("no GPU: transfer figures skipped", 0);
    return b.finish();
  }
  gpu::DeviceBuffer<unsigned char> d(n), d2(n);
  gpu::Stream s, s2;
  TransferOptions o = calibrated_transfer_options();
  o.threads = threads;
  auto poison_host = [&] { std::memset(dst.data(), 0xFF, n); };

  auto staged_h2d = b.time([&] { copy_to_device(d.data(), src.data(), n, s, o); });
  TANDEM_CUDA(cudaMemcpy(dst.data(), d.data(), n, cudaMemcpyDeviceToHost));
  b.record(c, "tandem staged H2D", staged_h2d, double(n), "B", dst == src,
           {{"chunk_bytes", o.chunk_bytes}, {"threads", o.threads}});
  poison_host();
  auto staged_d2h = b.time([&] { copy_to_host(dst.data(), d.data(), n, s, o); });
  b.record(c, "tandem staged D2H", staged_d2h, double(n), "B", dst == src);
  poison_host();
  TransferOptions half = o;
  half.threads = std::max(1, threads / 2);
  TANDEM_CUDA(cudaMemcpy(d2.data(), d.data(), n, cudaMemcpyDeviceToDevice));
  auto staged_both = b.time([&] {
    std::thread up([&] { copy_to_device(d.data(), src.data(), n, s, half); });
    copy_to_host(dst.data(), d2.data(), n, s2, half);
    up.join();
  });
  b.record(c, "tandem staged both ways (each)", staged_both, double(n), "B", dst == src);

  poison_host();
  auto plain_h2d = b.time([&] { TANDEM_CUDA(cudaMemcpy(d.data(), src.data(), n, cudaMemcpyHostToDevice)); });
  auto plain_d2h = b.time([&] { TANDEM_CUDA(cudaMemcpy(dst.data(), d.data(), n, cudaMemcpyDeviceToHost)); });
  b.record(c, "cudaMemcpy pageable H2D", plain_h2d, double(n), "B", true);
  b.record(c, "cudaMemcpy pageable D2H", plain_d2h, double(n), "B", dst == src);

  gpu::PinnedBuffer<unsigned char> p(n), q(n);
  std::memcpy(p.data(), src.data(), n);
  const std::string pc = fmt::format("{} MiB pinned", n >> 20);
  auto raw_h2d = b.measure([&] {
    gpu::Event e0, e1;
    e0.record(s);
    TANDEM_CUDA(cudaMemcpyAsync(d.data(), p.data(), n, cudaMemcpyHostToDevice, s));
    e1.record(s);
    e1.sync();
    return e1.seconds_since(e0);
  });
  b.record(pc, "cudaMemcpyAsync H2D", raw_h2d, double(n), "B", true);
  auto our_h2d = b.time([&] { copy_to_device(d.data(), p.data(), n, s, o); });
  TANDEM_CUDA(cudaMemcpy(dst.data(), d.data(), n, cudaMemcpyDeviceToHost));
  b.record(pc, "tandem H2D", our_h2d, double(n), "B", dst == src);
  auto raw_d2h = b.measure([&] {
    gpu::Event e0, e1;
    e0.record(s);
    TANDEM_CUDA(cudaMemcpyAsync(q.data(), d.data(), n, cudaMemcpyDeviceToHost, s));
    e1.record(s);
    e1.sync();
    return e1.seconds_since(e0);
  });
  b.record(pc, "cudaMemcpyAsync D2H", raw_d2h, double(n), "B", true);
  std::memset(q.data(), 0xFF, n);
  auto our_d2h = b.time([&] { copy_to_host(q.data(), d.data(), n, s, o); });
  b.record(pc, "tandem D2H", our_d2h, double(n), "B", std::memcmp(q.data(), src.data(), n) == 0);

  const double pa = detail::measure_pageable_access(src.data(), n, b.reps());
  if (pa > 0) b.info("kernel reading pageable memory GB/s", pa / 1e9);
  else b.info("kernel reading pageable memory: not supported (cudaDevAttrPageableMemoryAccess=0)", 0);

  b.info("host memcpy GB/s", host_bw / 1e9);
  b.goal("staged H2D / host memcpy", (n / staged_h2d.median) / host_bw, 0.9);
  b.goal("staged D2H / host memcpy", (n / staged_d2h.median) / host_bw, 0.9);
  b.info("staged both-ways GB/s each", n / staged_both.median / 1e9);
  b.info("staged H2D / plain pageable cudaMemcpy", plain_h2d.median / staged_h2d.median, "x");
  b.goal("pinned H2D tandem / cudaMemcpyAsync", raw_h2d.median / our_h2d.median, 0.95);
  b.goal("pinned D2H tandem / cudaMemcpyAsync", raw_d2h.median / our_d2h.median, 0.95);
#else
  b.info("CPU-only build: transfer figures need CUDA", 0);
#endif
  return b.finish();
}
