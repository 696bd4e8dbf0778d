// Internal: hardware counters of the current GPU over a range of kernel launches, read through
// CUPTI's range profiler (user range, user replay).
//
// The range is one call of `launch`, which enqueues kernels on the current device; the profiler
// repeats it once per pass the metrics need (a few metrics: one or two passes), calling `prepare`
// (not measured) before each pass so that every pass starts from the same data. Values are those
// CUPTI evaluates for the whole range (e.g. a `.sum` over all kernels of it).
//
// Errors are values: when counters cannot be read (a CPU-only build, a driver that restricts
// counters to administrators, an unknown metric, a device CUPTI does not support) the reading
// carries the reason and no values; a permission refusal is remembered, so later calls return it
// at once. Exceptions thrown by `launch` or `prepare` pass through after the profiler is closed.
// One range at a time per process (CUPTI profiling is per context and not reentrant): callers are
// serialised by a mutex.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace tandem {

struct CounterReading {
  std::vector<double> values;  // one per metric, in the order asked; empty when not read
  std::string unavailable;     // why the counters were not read; empty when they were
  int passes{0};               // replays of the range
  double seconds{0};           // wall time of the whole reading (setup, passes, evaluation)
  bool ok() const { return unavailable.empty(); }
};

CounterReading read_counters(const std::vector<std::string>& metrics, const std::function<void()>& launch,
                             const std::function<void()>& prepare = {});

// Metric names (Hopper, CUPTI's range profiler and Nsight Compute agree on them).
namespace metric {
inline constexpr const char* instructions = "smsp__inst_executed.sum";
inline constexpr const char* ipc = "sm__inst_executed.avg.per_cycle_active";  // instructions per active SM cycle
inline constexpr const char* sm_cycles = "sm__cycles_elapsed.avg";
inline constexpr const char* alu_utilisation = "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* shared_bank_conflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum";
}  // namespace metric

}  // namespace tandem
