// The signal a schedule is chosen by: run time, GPU energy (NVML's total-energy counter), or
// instructions per cycle (hardware counters through CUPTI).
//
// The controller (controller.hpp) profiles a minority of the blocks by time: its chunks last tens
// of microseconds, far below the energy counter's resolution. Energy is therefore measured on
// whole-grid runs repeated until one measurement spans min_span_seconds (50 ms by default), and
// every candidate gets both numbers from the same runs, so the two signals' choices can be compared.
// Instructions per cycle (instructions executed per active SM cycle, higher is better) are read
// over one whole-grid run per candidate (counters need no repeats), the kernels replayed as many
// times as the counters need.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/schedule.hpp"
#include "tandem/schedule/controller.hpp"

namespace tandem::schedule {

enum class Signal { time, energy, ipc };
// "time", "energy" or "ipc"; UsageError naming `signal` otherwise.
Signal parse_signal(const std::string& text);
std::string to_string(Signal s);

struct SignalOptions {
  Signal signal{Signal::energy};
  double min_span_seconds{0.05};  // one measurement: repeats of the whole grid lasting at least this
  std::uint32_t max_repeats{1u << 16};
  int rounds{2};  // each candidate measured this many times, candidates interleaved; the minimum kept
};

// One candidate's costs per whole-grid run.
struct SignalSample {
  Schedule schedule;
  std::uint32_t repeats{0};  // runs per measurement
  double seconds{0};         // per run
  double joules{0};          // per run; NaN when not measured (no counter, or it did not move)
  double ipc{std::numeric_limits<double>::quiet_NaN()};  // instructions per active SM cycle; NaN: not read
};

struct SignalComparison {
  Signal signal{Signal::time};  // the signal that chose (time when energy or IPC could not be read)
  std::vector<SignalSample> samples;
  std::size_t by_time{0};                // index of the fastest sample
  std::optional<std::size_t> by_energy;  // index of the least energy (none without readings)
  std::optional<std::size_t> by_ipc;     // index of the highest IPC (none when not read)
  std::size_t chosen{0};                 // by the signal used
  std::string energy_unavailable;        // why energy was not read (empty when it was)
  std::string ipc_unavailable;           // why IPC was not read (empty when it was, or not asked for)
  Report report;
};

// Repeats of a run of run_seconds that make one measurement last at least min_span_seconds,
// between 1 and max_repeats. UsageError naming the field for run_seconds <= 0 or NaN, or
// min_span_seconds < 0.
std::uint32_t repeats_for_span(double run_seconds, double min_span_seconds, std::uint32_t max_repeats);

// Index of the sample with the least seconds (Signal::time) or joules (Signal::energy), or the
// highest ipc (Signal::ipc); NaN samples skipped; ties keep the earlier sample; nullopt when none
// qualifies.
std::optional<std::size_t> pick_by(const std::vector<SignalSample>& samples, Signal s);

// The schedules to compare: the incumbent (or the ranking's first, or sequential), sequential,
// then the ranking in order, each once, those that fit g, at most max_candidates.
std::vector<Schedule> signal_candidates(const std::vector<Schedule>& ranking, const std::optional<Schedule>& incumbent,
                                        Grid g, std::uint32_t max_candidates);

// Runs the whole grid under each candidate (repeated, see SignalOptions), reads time and, when the
// GPU's energy counter can be read, energy; with o.signal = ipc also the IPC of one whole-grid run
// per candidate. Picks by o.signal (time when energy or IPC cannot be read:
// SignalComparison::energy_unavailable / ipc_unavailable and a notice say why). The launcher's
// output is that of the last run. NoDeviceError without CUDA; UsageError for no candidates.
SignalComparison compare_signals(BandLauncher& k, const std::vector<Schedule>& candidates, const SignalOptions& o = {});

}  // namespace tandem::schedule
