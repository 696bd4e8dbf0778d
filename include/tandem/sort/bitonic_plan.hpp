// The step plan of the hybrid bitonic merge sort: pure code, no devices.
//
// A bitonic network on 2^n elements has n merge subsets; subset p (p = 1..n) holds p steps, the
// steps numbered 1..n(n+1)/2 overall. Step j of subset p compares elements 2^(p-j) apart ("stride")
// inside blocks of 2^p. The data are split into contiguous shares, one per device (CPU first, then
// the GPUs). A step of stride s is *independent* exactly when every split point is a multiple of 2s:
// no comparator then crosses a share boundary and each device runs the step on its own share,
// all at once ("concurrent"). Other steps are *dependent*: all data are gathered on one device (the
// fastest) and the step runs there.
//
// Allocation (two devices, k = CPU/GPU capability, r = min(k, 1/k) for the weaker device):
// N is the positive integer with 1/2^(N+1) <= r/(r+1) < 1/2^N; the weaker device gets
//   policy a: floor(r/(1+r) * 2^n),  policy b: 2^n / 2^(N+1),  policy c: 2^n / 2^N  elements.
// The short-run rule: an interior concurrent run (dependent steps on both sides) shorter than
// min_interior_run steps runs on the gathering device alone. Without that rule, a cost model
// (per-device step times, link bandwidths) may decide gather vs concurrent per run and whether
// co-execution pays at all.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tandem::bitonic {

// One step of the network: number (1-based), merge subset p, and compare stride 2^(p-j).
struct NetStep {
  int step{0};
  int subset{0};
  std::uint64_t stride{0};
};

constexpr int step_count(int log2n) { return log2n * (log2n + 1) / 2; }
// The subset and stride of step `step` (1 <= step <= step_count(log2n)).
NetStep net_step(int step);
// log2 of the next power of two >= n (0 for n <= 1).
int ceil_log2(std::uint64_t n);

constexpr int kConcurrent = -1;

struct PlanStep {
  int step{0};
  int subset{0};
  std::uint64_t stride{0};
  bool independent{false};  // no comparator crosses a share boundary
  int mode{kConcurrent};    // kConcurrent, or the index of the device that runs the step alone
};

struct DeviceShare {
  std::string name;         // "cpu", "gpu", "gpu0", ...
  double capability{1};     // relative speed (keys per second, any unit)
  std::uint64_t offset{0};  // first element of the share in the padded array
  std::uint64_t count{0};
};

// A run of consecutive steps with the same mode.
struct PlanRun {
  int first{0}, last{0};  // step numbers, inclusive
  int mode{kConcurrent};
  int length() const { return last - first + 1; }
};

struct Plan {
  std::uint64_t n{0};  // elements asked for
  int log2n{0};        // network size 2^log2n >= n (padding with sentinels)
  double k{0};         // CPU/GPU capability ratio (two-device plans)
  int N{0};            // from 1/2^(N+1) <= r/(r+1) < 1/2^N; 0 when no split
  char policy{'c'};
  int min_interior_run{-1};  // -1: no short-run rule
  int gather{0};             // device index that runs dependent steps (the fastest)
  std::vector<DeviceShare> devices;
  std::vector<PlanStep> steps;
  std::string decided_by{"rule"};  // "rule", "min_interior_run", "cost model"
  std::vector<std::string> notes;

  std::uint64_t padded() const { return std::uint64_t{1} << log2n; }
  std::uint64_t share(const std::string& name) const;  // elements of that device (0 if absent)
  std::string mode_name(int mode) const;               // "concurrent" or the device name
  std::vector<PlanRun> runs() const;
  int concurrent_steps() const;
  // "1-6, 8-10": the concurrent steps as ranges ("none" when there are none).
  std::string concurrent_ranges() const;
};

// The cost model: per-device seconds per element per network step, and the host<->GPU link.
struct CostModel {
  std::vector<double> step_seconds;  // per device (same order as Plan::devices)
  double h2d_bytes_per_s{0};         // 0: free
  double d2h_bytes_per_s{0};
  std::size_t element_bytes{4};
  bool data_on_host{true};  // input starts and result ends in host memory
  int host_device{0};       // index of the CPU device in Plan::devices (-1: none)
  // Several GPU entries: per device, the step time when it runs alone (a gathered run; entries
  // sharing one GPU are slower only while they run together; empty: step_seconds), the GPU each
  // device runs on (-1 for the host; empty: every device its own), and the GPU-to-GPU links
  // (0: the slower host link).
  std::vector<double> alone_step_seconds;
  std::vector<int> gpu_of;
  double same_gpu_bytes_per_s{0};  // between entries on one GPU (device-to-device copy)
  double peer_bytes_per_s{0};      // between two GPUs
};

struct PlanCost {
  double total{0};
  double compute{0};
  double transfer{0};
  std::vector<double> run_seconds;  // per PlanRun, compute + transfers it causes
};

// Two devices: CPU (index 0, low part of the array) and GPU (index 1, high part).
// k <= 0: everything on the GPU; k = +inf: everything on the CPU.
Plan make_plan(std::uint64_t n, double k, char policy, int min_interior_run = -1);

// The same, with gather-vs-concurrent per run and "does co-execution pay" from the cost model
// (when min_interior_run >= 0 the short-run rule overrides it).
Plan make_plan(std::uint64_t n, double k, char policy, int min_interior_run, const CostModel& cost);

// Any number of devices with relative capabilities (device 0 is the host CPU by convention, but
// any names work). The fastest device gets the remainder and gathers; each other device gets its
// proportional share (policy a) or that share rounded to a power-of-two fraction (down: b,
// up: c). Shares are laid out weaker-and-larger first so split points are as aligned as possible.
Plan make_multi_plan(std::uint64_t n, const std::vector<DeviceShare>& devices, char policy, int min_interior_run = -1);

// Predicted time of the plan under the model.
PlanCost predict(const Plan& p, const CostModel& cost);

nlohmann::json to_json(const Plan& p);
std::string describe(const Plan& p);  // a readable step table

}  // namespace tandem::bitonic
