// Top-k over ranked lists: GPU NRA against the paper's single-thread CPU NRA, NRA's
// reading depth against TA's, and NRA against the full scan (the anchor), every result checked
// against the brute-force reference.
//
// Floor: the full scan reads n*m*8 bytes (10M x 4 = 320 MB: ~0.1 ms at ~3.3 TB/s) plus random
// read-modify-writes of an 80 MB aggregate array and a top-k select (~2 passes over 80 MB). NRA on
// uniform data reads ~11% of the lists (~35 MB) but scatters into per-object state at random
// (~4.5M atomics) and pays a host round trip per batch (~10-20 us): with an adaptive stride about
// 15-20 rounds, so its floor is dominated by the atomics and the round trips (~0.3 ms), not bytes.
// On correlated data NRA stops after a few thousand levels: a few rounds, ~0.05 ms.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/topk.hpp"

using namespace tandem;
using namespace tandem::topk;

namespace {

Lists make(std::uint64_t m, Dist dist) {
  GenOptions g;
  g.objects = m;
  g.lists = 4;
  g.dist = dist;
  g.seed = 4;
  return generate(g);
}

tandem::Stats once(bench::Bench& b, const std::function<void()>& f, int reps) {
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    Stopwatch w;
    f();
    s.push_back(w.seconds());
  }
  (void)b;
  return summarize(s);
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("topk", argc, argv);
  const std::uint64_t k = std::uint64_t(b.get_int("--k", 100));
  const bool gpu = gpu_count() > 0;
  std::vector<std::uint64_t> sizes =
      b.quick() ? std::vector<std::uint64_t>{100'000, 200'000}
                : std::vector<std::uint64_t>{1'000'000, 2'000'000, 4'000'000, 6'000'000, 8'000'000, 10'000'000};
  if (b.has_flag("--max-m")) {
    const auto cap = std::uint64_t(b.get_int("--max-m", 10'000'000));
    std::erase_if(sizes, [&](std::uint64_t m) { return m > cap; });
    if (sizes.empty()) sizes.push_back(cap);
  }
  Options cpu1;
  cpu1.device = Device::cpu;
  cpu1.threads = 1;
  cpu1.stride = 100;  // the paper's baseline
  Options cpu_mt;
  cpu_mt.device = Device::cpu;
  Options g_fixed, g_adapt;
  g_fixed.stride = 100;
  g_adapt.stride = 0;

  // 1. The paper's experiment: uniform, 4 lists, k = 100, 1M..10M objects.
  double last_ratio = 0, last_ratio_paper = 0, nra_depth = 0, ta_depth = 0, last_m = 0;
  for (std::uint64_t m : sizes) {
    const auto l = make(m, Dist::uniform);
    const auto ref = reference(l, k);
    const std::string c = fmt::format("uniform {}M x 4, k={}", double(m) / 1e6, k);
    Result r1;
    auto s_cpu = once(
        b, [&] { r1 = nra_cpu(l, k, {}, cpu1); }, 1);
    b.record(c, "CPU NRA 1 thread, stride 100", s_cpu, double(m) * 4, "entries", r1.items == ref,
             {{"depth", r1.stats.mean_depth() / double(m)}, {"rounds", r1.stats.rounds}});
    Result rmt;
    auto s_mt = once(
        b, [&] { rmt = nra_cpu(l, k, {}, cpu_mt); }, 1);
    b.record(c, "CPU NRA all cores, adaptive", s_mt, double(m) * 4, "entries", rmt.items == ref);
    Result rs;
    auto s_scan_cpu = once(
        b, [&] { rs = scan_cpu(l, k, {}, cpu_mt); }, 1);
    b.record(c, "CPU scan all cores", s_scan_cpu, double(m) * 4, "entries", rs.items == ref);
    if (m == sizes.back()) {
      // Reading depth: exact NRA (stride 100 => within 100 levels) and TA (checked every level).
      TaIndex ix = build_ta_index(l);
      Options o = cpu1;
      auto t = ta_cpu(l, k, {}, o, &ix);
      if (t.items != ref) b.fail("TA differs from the reference");
      nra_depth = 100.0 * r1.stats.mean_depth() / double(m);
      ta_depth = 100.0 * t.stats.mean_depth() / double(m);
      b.info(fmt::format("NRA depth % of each list, uniform {}M x 4 k={} (sim: 11.4)", m / 1e6, k), nra_depth, "%");
      b.info(fmt::format("TA depth % of each list, uniform {}M x 4 k={} (sim: 3.1)", m / 1e6, k), ta_depth, "%");
    }
    if (!gpu) continue;
    auto d = upload(l);
    Result rf, ra, rsc;
    auto s_fixed = b.time([&] { rf = nra_gpu(*d, k, {}, g_fixed); });
    b.record(c, "GPU NRA stride 100 (paper)", s_fixed, double(m) * 4, "entries", rf.items == ref,
             {{"rounds", rf.stats.rounds}});
    auto s_adapt = b.time([&] { ra = nra_gpu(*d, k, {}, g_adapt); });
    b.record(c, "GPU NRA adaptive stride", s_adapt, double(m) * 4, "entries", ra.items == ref,
             {{"rounds", ra.stats.rounds}, {"depth", ra.stats.mean_depth() / double(m)}});
    auto s_scan = b.time([&] { rsc = scan_gpu(*d, k, {}, g_adapt); });
    b.record(c, "GPU full scan (anchor)", s_scan, double(m) * 4, "entries", rsc.items == ref);
    Result rt;
    auto s_ta = b.time([&] { rt = ta_gpu(*d, k, {}, g_adapt); });
    b.record(c, "GPU TA (index built once)", s_ta, double(m) * 4, "entries", rt.items == ref);
    last_ratio = s_cpu.median / s_adapt.median;
    last_ratio_paper = s_cpu.median / s_fixed.median;
    last_m = double(m);
    if (m == sizes.back()) {
      b.info(fmt::format("GPU NRA stride 100 / CPU NRA 1 thread at {}M (paper: 2.7-3.8x)", m / 1'000'000.0),
             last_ratio_paper, "x");
      b.goal(fmt::format("GPU NRA adaptive vs CPU NRA 1 thread at {}M", m / 1'000'000.0), last_ratio, 100);
      b.info("GPU NRA adaptive rounds", double(ra.stats.rounds));
      b.info("GPU NRA stride 100 rounds", double(rf.stats.rounds));
      b.goal(fmt::format("uniform {}M: GPU scan time / GPU NRA time", m / 1'000'000.0), s_scan.median / s_adapt.median,
             1.0);
      b.info("GPU NRA adaptive ms", s_adapt.median * 1e3, "ms");
      b.info("GPU scan ms", s_scan.median * 1e3, "ms");
      // Managed memory (the paper's shared-memory setting): only the pages NRA touches move.
      auto dm = upload(l, Memory::managed);
      Result rm;
      auto s_man = b.time([&] { rm = nra_gpu(*dm, k, {}, g_adapt); });
      b.record(c, "GPU NRA adaptive, managed memory", s_man, double(m) * 4, "entries", rm.items == ref);
    }
  }
  // 3. Against the full scan on correlated and anti-correlated data (largest size).
  if (gpu) {
    const std::uint64_t m = sizes.back();
    for (Dist dist : {Dist::correlated, Dist::anticorrelated}) {
      const auto l = make(m, dist);
      const auto ref = reference(l, k);
      auto d = upload(l);
      const std::string c = fmt::format("{} {}M x 4, k={}", to_string(dist), m / 1e6, k);
      Result rn, rs;
      auto s_nra = b.time([&] { rn = nra_gpu(*d, k, {}, g_adapt); });
      b.record(c, "GPU NRA adaptive", s_nra, double(m) * 4, "entries", rn.items == ref,
               {{"depth", rn.stats.mean_depth() / double(m)}});
      auto s_scan = b.time([&] { rs = scan_gpu(*d, k, {}, g_adapt); });
      b.record(c, "GPU full scan (anchor)", s_scan, double(m) * 4, "entries", rs.items == ref);
      Options a;
      a.device = Device::gpu;
      Result ra;
      auto s_auto = once(
          b, [&] { ra = query(l, k, {}, a); }, 1);
      b.record(c, "auto (incl. upload)", s_auto, double(m) * 4, "entries", ra.items == ref,
               {{"picked", ra.stats.algo}});
      if (dist == Dist::correlated) {
        b.goal("correlated: GPU scan time / GPU NRA time", s_scan.median / s_nra.median, 5.0);
        b.info("correlated: NRA depth %", 100.0 * rn.stats.mean_depth() / double(m), "%");
      } else {
        b.info("anticorrelated: NRA depth %", 100.0 * rn.stats.mean_depth() / double(m), "%");
        b.goal("anticorrelated: auto picks the scan (1 = yes)", ra.stats.algo == "scan" ? 1.0 : 0.0, 1.0);
      }
    }
  } else {
    // CPU-only: auto's choice on anti-correlated data still says something.
    const auto l = make(sizes.back(), Dist::anticorrelated);
    Options a;
    a.device = Device::cpu;
    auto ra = query(l, k, {}, a);
    if (ra.items != reference(l, k)) b.fail("auto on anti-correlated data differs from the reference");
    b.info("no GPU: GPU figures skipped; anticorrelated auto picks the scan (1 = yes)",
           ra.stats.algo == "scan" ? 1.0 : 0.0);
  }
  (void)last_m;
  return b.finish();
}
