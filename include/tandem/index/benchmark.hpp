// The GPU benchmark driver shared by bench_index and `tandem index --bench`. Without CUDA (or
// without a GPU) run_gpu_benchmarks throws NoDeviceError.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/timing.hpp"

namespace tandem::index {

struct BenchOptions {
  bool quick{false};
  int reps{7};
  int warmup{2};
};

struct BenchRow {
  std::string case_name, method;
  Stats stats;      // seconds
  double bytes{0};  // bytes moved per run (read + written)
  bool ok{true};
  nlohmann::json extra = nlohmann::json::object();
};

struct BenchGoal {
  std::string what;
  double value{0}, goal{0};
  bool is_goal{false};  // false: an info line
  std::string unit;
};

struct BenchResult {
  std::vector<BenchRow> rows;
  std::vector<BenchGoal> goals;
};

BenchResult run_gpu_benchmarks(const BenchOptions& o, const std::function<void(const BenchRow&)>& on_row = {});

}  // namespace tandem::index
