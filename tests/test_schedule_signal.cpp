// Choosing schedules by time, energy or IPC: the measurement sizing, the pick, the candidates, the
// energy counter's arithmetic and its absence (pure code and NVML's absence; no GPU needed).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/energy_counter.hpp"
#include "tandem/core/error.hpp"
#include "tandem/schedule/signal.hpp"

using namespace tandem;
using namespace tandem::schedule;

TEST(ScheduleSignal, ParseAndName) {
  EXPECT_EQ(parse_signal("time"), Signal::time);
  EXPECT_EQ(parse_signal("energy"), Signal::energy);
  EXPECT_EQ(parse_signal("ipc"), Signal::ipc);
  EXPECT_EQ(to_string(Signal::energy), "energy");
  try {
    parse_signal("power");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("signal 'power'"), std::string::npos) << e.what();
  }
}

TEST(ScheduleSignal, RepeatsSpanTheMinimum) {
  EXPECT_EQ(repeats_for_span(1e-3, 0.05, 1000), 50u);     // 50 x 1 ms = 50 ms
  EXPECT_EQ(repeats_for_span(0.3e-3, 0.05, 1000), 167u);  // rounded up: 167 x 0.3 ms >= 50 ms
  EXPECT_GE(repeats_for_span(0.3e-3, 0.05, 1000) * 0.3e-3, 0.05);
  EXPECT_EQ(repeats_for_span(0.2, 0.05, 1000), 1u);      // one run already spans it
  EXPECT_EQ(repeats_for_span(1e-7, 0.05, 1000), 1000u);  // capped
  EXPECT_EQ(repeats_for_span(1e-3, 0.0, 1000), 1u);
  EXPECT_EQ(repeats_for_span(1e-3, 0.05, 0), 1u);
  EXPECT_THROW(repeats_for_span(0.0, 0.05, 10), UsageError);
  EXPECT_THROW(repeats_for_span(std::nan(""), 0.05, 10), UsageError);
  EXPECT_THROW(repeats_for_span(1e-3, -1.0, 10), UsageError);
  try {
    repeats_for_span(-1, 0.05, 10);
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("run_seconds"), std::string::npos) << e.what();
  }
}

TEST(ScheduleSignal, PickByEachSignal) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Schedule seq = Schedule::sequential(), zz = parse_schedule("zigzag"), hil = parse_schedule("hilbert");
  std::vector<SignalSample> s{{seq, 10, 2e-3, 0.50}, {zz, 10, 1e-3, 0.70}, {hil, 10, 1e-3, nan}};
  EXPECT_EQ(pick_by(s, Signal::time), 1u);    // tie with hilbert: the earlier
  EXPECT_EQ(pick_by(s, Signal::energy), 0u);  // faster is not always cheaper; NaN skipped
  s[0].joules = nan;
  s[1].joules = nan;
  EXPECT_FALSE(pick_by(s, Signal::energy));
  EXPECT_FALSE(pick_by({}, Signal::time));
  EXPECT_FALSE(pick_by(s, Signal::ipc));  // IPC not read
}

TEST(ScheduleSignal, PickByIpcTakesTheHighest) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Schedule seq = Schedule::sequential(), zz = parse_schedule("zigzag"), hil = parse_schedule("hilbert");
  std::vector<SignalSample> s{{seq, 10, 1e-3, 0.5, 1.2}, {zz, 10, 2e-3, 0.7, 2.5}, {hil, 10, 1e-3, 0.4, 2.5}};
  EXPECT_EQ(pick_by(s, Signal::ipc), 1u);  // higher is better; the tie with hilbert keeps the earlier
  EXPECT_EQ(pick_by(s, Signal::time), 0u);
  s[1].ipc = nan;
  EXPECT_EQ(pick_by(s, Signal::ipc), 2u);  // NaN skipped
}

TEST(ScheduleSignal, Candidates) {
  const Grid g{16, 16};
  const Schedule seq = Schedule::sequential(), zz = parse_schedule("zigzag"), t = parse_schedule("tiled:4x4"),
                 big = parse_schedule("tiled:32x32"), hil = parse_schedule("hilbert");
  // Incumbent first, sequential next, then the ranking; duplicates and what does not fit dropped.
  auto c = signal_candidates({zz, big, seq, t, hil}, t, g, 4);
  EXPECT_EQ(c, (std::vector<Schedule>{t, seq, zz, hil}));
  c = signal_candidates({}, std::nullopt, g, 4);
  EXPECT_EQ(c, std::vector<Schedule>{seq});
  c = signal_candidates({zz, t}, std::nullopt, g, 2);
  EXPECT_EQ(c, (std::vector<Schedule>{zz, seq}));
}

TEST(ScheduleSignal, JoulesPerRun) {
  EXPECT_DOUBLE_EQ(joules_per_run(1000, 3000, 4), 0.5);    // 2000 mJ over 4 runs
  EXPECT_TRUE(std::isnan(joules_per_run(1000, 1000, 4)));  // below the counter's resolution
  EXPECT_THROW(joules_per_run(1000, 2000, 0), UsageError);
  try {
    joules_per_run(2000, 1000, 1);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("before_mj = 2000"), std::string::npos) << e.what();
  }
}

// A bus id no GPU has: unavailable with a reason (no NVML here, or NVML without that GPU), and a
// read is an error rather than a made-up number.
TEST(ScheduleSignal, EnergyCounterUnavailableSaysWhy) {
  const EnergyCounter c("ffff:ff:1f.7");
  EXPECT_FALSE(c.available());
  EXPECT_FALSE(c.why().empty());
  EXPECT_THROW(c.millijoules(), Error);
}

#if !TANDEM_HAS_CUDA
TEST(ScheduleSignal, CompareNeedsAGpu) {
  struct None : BandLauncher {
    std::string name() const override { return "none"; }
    Grid grid() const override { return {1, 1}; }
    void launch_rect(const Schedule&, BlockRect) override {}
    cudaStream_t stream() const override { return nullptr; }
  } k;
  EXPECT_THROW(compare_signals(k, {Schedule::sequential()}), NoDeviceError);
  SignalOptions o;
  o.signal = Signal::ipc;
  EXPECT_THROW(compare_signals(k, {Schedule::sequential()}, o), NoDeviceError);
}
#endif
