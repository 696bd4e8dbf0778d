// Index methods on the GPU: div/mod, magic division, the carry iterator, packed tables,
// a plain 3-D launch, and tandem's wide carry kernels against a device copy of the same bytes.
// Kernels and checks live in src/index (shared with `tandem index --bench`); this file records.
#include <algorithm>

#include "harness.hpp"
#include "tandem/core/device.hpp"
#include "tandem/index.hpp"
#include "tandem/index/benchmark.hpp"

using namespace tandem;

int main(int argc, char** argv) {
  bench::Bench b("index", argc, argv);
#if TANDEM_HAS_CUDA
  if (gpu_count() == 0) {
    b.info("no GPU: index benchmarks skipped", 0);
    return b.finish();
  }
  index::BenchOptions o;
  o.quick = b.quick();
  o.reps = b.reps() < 5 ? 5 : b.reps();
  o.warmup = std::max(1, b.warmup());
  const auto r = index::run_gpu_benchmarks(o, [&](const index::BenchRow& row) {
    b.record(row.case_name, row.method, row.stats, row.bytes, "B", row.ok, row.extra);
  });
  for (const auto& g : r.goals) {
    if (g.is_goal) b.goal(g.what, g.value, g.goal, true, g.unit);
    else b.info(g.what, g.value, g.unit);
  }
#else
  b.info("CPU-only build: index benchmarks need CUDA", 0);
#endif
  return b.finish();
}
