// Internal: the GPU side of the bitonic sort (kernels in gpu_steps.cu, driver pieces in
// hybrid_execute.cpp, gpu_launch_tuning.cpp and multi_execute.cpp). Plain C++ (streams are
// cudaStream_t from tandem/cuda/stream.hpp), so the host driver (driver.cpp) includes it in every
// build; the GPU functions are declared only when TANDEM_HAS_CUDA is 1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/report.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/sort.hpp"
#include "tandem/sort/bitonic_plan.hpp"

namespace tandem::bitonic::detail {

// Launch shape of the fused GPU bitonic. A tile of block*elems elements is sorted (or merged) in
// registers and shared memory per block; larger strides run in register passes of `fuse` steps.
struct GpuConfig {
  int block{0};     // threads per block; 0: tuned (cached)
  int elems{0};     // elements per thread ("vector length"): 1 = the scalar kernel; 0: tuned
  int fuse{0};      // global steps per register pass (1..4); 0: 4
  int sm_limit{0};  // launch at most this many blocks (persistent-style loops); 0: no limit
  int device{0};    // CUDA device the steps run on
  std::string describe() const;
};

nlohmann::json to_json(const GpuConfig& c);

#if TANDEM_HAS_CUDA
// Runs network steps first..last on device elements [lo, hi) (global indexing) on `stream`.
// Asynchronous.
template <class U>
void gpu_steps(U* d_data, std::uint64_t lo, std::uint64_t hi, int first, int last, const GpuConfig& cfg,
               cudaStream_t stream);

// Registers per thread of the tile kernel for `elems` elements per thread (cudaFuncGetAttributes).
template <class U>
int tile_kernel_registers(int elems);

// Fills in block/elems (from the tuning cache, else by measuring candidates on `padded` random
// elements and storing the winner), fuse defaults. Block sizes are bounded by the tile kernel's
// registers (launch_choice.hpp). TuneSignal::time: every candidate timed, the fastest kept.
// TuneSignal::counters: one candidate per vector length (its largest block), each timed and its
// hardware counters read, the largest counter ratio kept; where counters cannot be read, a notice
// in `report` says why and time decides. tune_report receives the table of candidates; report
// the cache's warnings (a malformed entry measured again).
template <class U>
GpuConfig gpu_config(std::uint64_t padded, GpuConfig want, TuneSignal signal = TuneSignal::time,
                     std::string* tune_report = nullptr, Report* report = nullptr);

// Device-resident sort time of `padded` elements copied from `host` (median of a few runs,
// transfers excluded): what k is measured from.
template <class U>
double gpu_time_sort(const U* host, std::uint64_t padded, const GpuConfig& cfg);

// Executes a plan on the padded host array (pinned when possible): concurrent runs on CPU and GPU
// at once, gathered runs on the gathering device, with the copies between them. Times per run go
// into the report. Two devices: the CPU (plan index 0) and the GPU cfg.device (index 1).
template <class U>
void hybrid_execute(U* host, const Plan& plan, const GpuConfig& cfg, int threads, Report& r);

// Executes a plan over the CPU (plan index 0) and several GPU entries (index e + 1 runs on
// gpus[e].device; entries may repeat a device: {0, 0} is two shares on GPU 0, each with its own
// streams and buffer). Concurrent runs: every device sorts its share at once. Gathered runs: the
// shares move to the gathering device (peer copies where the GPUs can reach each other, D2D on one
// GPU, otherwise staged through the pinned host array). Throws OutOfMemoryError before any step
// runs when a GPU cannot hold what the plan gives it.
template <class U>
void multi_execute(U* host, const Plan& plan, const std::vector<GpuConfig>& gpus, int threads, Report& r);

// Enables peer access between two CUDA devices both ways (once per pair); false when either
// cannot reach the other (copies between them are then staged through host memory).
bool enable_peer_access(int a, int b);

// Bytes per second of a copy from GPU a to GPU b (a == b: a device-to-device copy on that GPU),
// timed once per pair and process on 64 MiB; 0 when b cannot reach a (copies are then staged).
double gpu_link_bandwidth(int a, int b);

#endif

}  // namespace tandem::bitonic::detail
