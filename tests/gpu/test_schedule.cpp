// Schedule kernels on the GPU: every kernel under every schedule (ticket and Hilbert table
// included) gives the CPU reference's result, identical across schedules; the controller runs
// every block once and reuses its cached choice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "schedule/profile_plan.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/schedule/kernels.hpp"
#include "tandem/schedule/signal.hpp"
#include "test_util.hpp"

using namespace tandem;
using namespace tandem::schedule;

namespace {
bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }
}  // namespace

TEST(GpuSchedule, EveryKernelEverySchedule) {
  TANDEM_REQUIRE_GPU();
  const std::vector<std::uint32_t> sizes =
      sanitizer() ? std::vector<std::uint32_t>{256} : std::vector<std::uint32_t>{256, 768};
  for (const auto& k : kernel_specs())
    for (std::uint32_t n : sizes) {
      KernelRunner r(k, n);
      const auto want = reference(k, n, r.input(0), r.input(1));
      std::vector<float> first;
      auto scheds = candidates(r.grid(), true);
      if (sanitizer()) scheds.resize(std::min<std::size_t>(scheds.size(), 3));
      for (const Schedule& s : scheds)
        for (int mode = 0; mode < 3; ++mode) {
          r.set_ticket(mode == 1);
          r.set_hilbert_table(mode == 2 ? std::optional<bool>(true) : std::optional<bool>(false));
          r.poison_output();
          r.time_full(s);
          const auto out = r.output();
          const double tol = k.name.rfind("intimg", 0) == 0 ? 1e-5 : 0.0;  // others are bit-exact
          ASSERT_LE(max_rel_error(out, want), tol) << k.name << " " << n << " " << to_string(s) << " mode " << mode;
          if (first.empty()) first = out;
          else ASSERT_EQ(out, first) << k.name << " " << n << " " << to_string(s) << " mode " << mode;
        }
    }
}

TEST(GpuSchedule, BandsCoverTheGridOnce) {
  TANDEM_REQUIRE_GPU();
  const KernelSpec k = kernel_spec("conv11");
  KernelRunner r(k, 512);  // 16x16 blocks
  const auto want = reference(k, 512, r.input(0), {});
  r.poison_output();
  r.launch(Schedule::hilbert(), 0, 3);
  r.launch(Schedule::tiled(4, 2), 3, 2);
  r.launch(Schedule::strided(16, 1), 5, 11);
  EXPECT_EQ(r.output(), want);
  EXPECT_THROW(r.launch(Schedule::sequential(), 10, 7), UsageError);
  EXPECT_THROW(r.launch(Schedule::tiled(4, 4), 0, 2), UsageError);
  EXPECT_THROW(r.launch_rect(Schedule::sequential(), {10, 0, 7, 1}), UsageError);
}

// Pieces of a layout, each under another (rescaled) schedule, the skipped strip ends and the rest
// cover the grid once: the controller's way of running a grid.
TEST(GpuSchedule, PiecesCoverTheGridOnce) {
  TANDEM_REQUIRE_GPU();
  for (const char* name : {"intimg-row", "copy-col"}) {
    const KernelSpec k = kernel_spec(name);
    const std::uint32_t n = 768;
    KernelRunner r(k, n);
    const Grid g = r.grid();
    const auto want = reference(k, n, r.input(0), {});
    const auto cands = candidates(g, true);
    r.poison_output();
    PieceLayout L(g, 2);
    std::size_t i = 0;
    auto run = [&](const BlockRect& rc) {
      Schedule s = rescale(cands[i++ % cands.size()], g, rc.grid());
      if (!fits(s, rc.grid())) s = Schedule::sequential();
      r.launch_rect(s, rc);
    };
    for (std::uint32_t w : {3u, 5u, 2u, 7u, 1u}) {
      BlockRect pc;
      std::vector<BlockRect> skipped;
      if (!L.take(w, pc, skipped)) break;
      for (const auto& sk : skipped) run(sk);
      run(pc);
    }
    for (const auto& rc : L.rest()) run(rc);
    const double tol = k.name.rfind("intimg", 0) == 0 ? 1e-5 : 0.0;
    EXPECT_LE(max_rel_error(r.output(), want), tol) << name;
  }
}

TEST(GpuSchedule, OutputDifferencesOnTheDevice) {
  TANDEM_REQUIRE_GPU();
  KernelRunner r(kernel_spec("copy-row"), 256);
  r.poison_output();
  EXPECT_EQ(r.output_differences(), 256u * 256u);  // nothing kept yet: all differ
  r.time_full(Schedule::sequential());
  r.keep_output();
  EXPECT_EQ(r.output_differences(), 0u);
  r.poison_output();
  r.launch(Schedule::zigzag(), 0, 3);  // 3 of 8 block rows: 3 x 32 x 256 elements written
  EXPECT_EQ(r.output_differences(), 256u * 256u - 3u * 32u * 256u);
}

TEST(GpuSchedule, ControllerIdenticalAndCached) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  TuningCache cache(dir.file("tuning.json"));
  for (const char* name : {"matmul", "copy-col", "intimg-row"}) {
    const KernelSpec k = kernel_spec(name);
    const std::uint32_t n = sanitizer() ? 512 : 2048;
    KernelRunner r(k, n);
    const Grid g = r.grid();
    r.time_full(Schedule::sequential());
    const auto want = r.output();
    ControllerOptions o;
    o.cache = &cache;
    o.min_chunk_blocks = sanitizer() ? 2 : 16;  // small chunks so that this grid can be profiled
    o.profile_fraction = sanitizer() ? 0.45 : 0.25;
    o.min_chunk_seconds = 0;  // trust any chunk and afford any launch: this test is about coverage,
    o.max_overhead = 1e9;     // not timing
    const auto st = static_select(k, n, candidates(g), 256);
    o.fallback = st.best;
    o.ranking = static_ranking(st);
    r.poison_output();
    const auto first = run_controlled(r, o);
    EXPECT_EQ(first.source, "profiled") << name;
    EXPECT_EQ(first.incumbent, st.best) << name;
    EXPECT_GE(first.profile.size(), 3u) << name;  // probe, candidate, incumbent
    EXPECT_EQ(r.output(), want) << name;
    EXPECT_LE(first.profiled_blocks, std::uint64_t(o.profile_fraction * double(g.count()))) << name;
    std::uint64_t blocks = 0;
    for (const auto& p : first.profile) blocks += p.rect.count();
    EXPECT_EQ(blocks, first.profiled_blocks);
    r.poison_output();
    const auto second = run_controlled(r, o);
    EXPECT_EQ(second.source, "cache");
    EXPECT_EQ(second.chosen, first.chosen);
    EXPECT_EQ(r.output(), want);
    // Chunks that could never be trusted: one probe chunk under the incumbent, then the rest.
    ControllerOptions slow = o;
    slow.use_cache = false;
    slow.min_chunk_seconds = 1e3;
    r.poison_output();
    const auto pr = run_controlled(r, slow);
    EXPECT_EQ(pr.chosen, st.best) << name;
    EXPECT_EQ(pr.profile.size(), 1u) << name;
    EXPECT_EQ(pr.source.rfind("probe", 0), 0u) << pr.source;
    EXPECT_EQ(r.output(), want) << name;
    // Not enough blocks to profile: the fallback runs the whole grid.
    ControllerOptions tiny;
    tiny.use_cache = false;
    tiny.min_chunk_blocks = 1u << 30;
    tiny.fallback = Schedule::zigzag();
    r.poison_output();
    const auto fb = run_controlled(r, tiny);
    EXPECT_EQ(fb.chosen, Schedule::zigzag());
    EXPECT_NE(fb.source.find("not profiled"), std::string::npos);
    EXPECT_EQ(r.output(), want);
  }
}

namespace {
std::vector<Schedule> signal_candidates_of_test() {
  return {Schedule::sequential(), parse_schedule("tiled:4x4"), parse_schedule("hilbert")};
}

// copy-col compared under those candidates; its output checked against the reference.
SignalComparison compare_on_copy_col(const SignalOptions& o) {
  const KernelSpec& k = kernel_spec("copy-col");
  const std::uint32_t n = sanitizer() ? 256 : 2048;
  KernelRunner r(k, n);
  r.poison_output();
  SignalComparison c = compare_signals(r, signal_candidates_of_test(), o);
  EXPECT_EQ(r.output(), reference(k, n, r.input(0), r.input(1)));
  return c;
}
}  // namespace

// Time and energy per whole-grid run: measurements span the minimum, energy (where NVML reads it)
// is a plausible power times the time, and the choice falls back to time, saying so, where it
// cannot be read.
TEST(GpuSchedule, SignalsTimeAndEnergy) {
  TANDEM_REQUIRE_GPU();
  const std::vector<Schedule> cands = signal_candidates_of_test();
  SignalOptions o;
  o.signal = Signal::energy;
  if (sanitizer()) o.min_span_seconds = 0.002, o.rounds = 1;
  const SignalComparison c = compare_on_copy_col(o);
  ASSERT_EQ(c.samples.size(), cands.size());
  std::size_t read = 0;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const SignalSample& s = c.samples[i];
    EXPECT_EQ(s.schedule, cands[i]);
    EXPECT_GT(s.seconds, 0.0);
    EXPECT_GE(s.repeats * s.seconds, 0.5 * o.min_span_seconds) << to_string(s.schedule);  // min over rounds
    // A span the counter did not step across reads as NaN (not read); the others must be plausible.
    if (c.energy_unavailable.empty() && !sanitizer() && !std::isnan(s.joules)) {
      ++read;
      const double watts = s.joules / s.seconds;
      EXPECT_GT(watts, 20.0) << to_string(s.schedule);  // a GPU at work, in watts (mJ read as J would be 1000x off)
      EXPECT_LT(watts, 2000.0) << to_string(s.schedule);
    }
  }
  if (c.energy_unavailable.empty() && !sanitizer()) EXPECT_GT(read, 0u) << "no candidate's energy was read";
  EXPECT_LT(c.by_time, cands.size());
  if (c.energy_unavailable.empty()) {
    ASSERT_TRUE(c.by_energy.has_value());
    EXPECT_EQ(c.signal, Signal::energy);
    EXPECT_EQ(c.chosen, *c.by_energy);
  } else {
    EXPECT_EQ(c.signal, Signal::time);
    EXPECT_EQ(c.chosen, c.by_time);
    ASSERT_FALSE(c.report.notices.empty());
    EXPECT_NE(c.report.notices.front().find("chose by time"), std::string::npos);
  }
}

// IPC per whole-grid run from hardware counters: in range on every candidate, the pick is the
// highest, the output survives the replays; where counters cannot be read, time chooses and a
// notice says why.
TEST(GpuSchedule, SignalIpc) {
  TANDEM_REQUIRE_GPU();
  SignalOptions o;
  o.signal = Signal::ipc;
  o.min_span_seconds = 0.005;
  o.rounds = 1;
  const SignalComparison c = compare_on_copy_col(o);
  ASSERT_EQ(c.samples.size(), signal_candidates_of_test().size());
  if (!c.ipc_unavailable.empty()) {
    EXPECT_EQ(c.signal, Signal::time);
    EXPECT_EQ(c.chosen, c.by_time);
    EXPECT_FALSE(c.by_ipc.has_value());
    bool said = false;
    for (const auto& s : c.report.notices) said |= s.find("IPC could not be read") != std::string::npos;
    EXPECT_TRUE(said) << c.ipc_unavailable;
    return;
  }
  ASSERT_TRUE(c.by_ipc.has_value());
  EXPECT_EQ(c.signal, Signal::ipc);
  EXPECT_EQ(c.chosen, *c.by_ipc);
  for (const SignalSample& s : c.samples) {
    EXPECT_GT(s.ipc, 0.0) << to_string(s.schedule);
    EXPECT_LE(s.ipc, 4.0) << to_string(s.schedule);  // an SM issues at most 4 warp instructions per cycle
    EXPECT_LE(s.ipc, c.samples[*c.by_ipc].ipc) << to_string(s.schedule);
  }
}
