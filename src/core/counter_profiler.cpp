// Hardware counters through CUPTI's range profiler (counter_profiler.hpp): one user range, replayed
// by the caller's launch function until every pass the metrics need has run.
#include "core/counter_profiler.hpp"

#include "tandem/core/timing.hpp"

#if TANDEM_HAS_CUDA
#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <cstdint>
#include <mutex>

#include <fmt/format.h>

#include "tandem/cuda/runtime.hpp"
#endif

namespace tandem {

#if TANDEM_HAS_CUDA

namespace {

std::mutex g_mutex;             // one range at a time in the process
std::string g_refused;          // a permission refusal, remembered (under g_mutex)
bool g_initialised = false;     // cuptiProfilerInitialize done (under g_mutex)
constexpr int kMaxPasses = 64;  // user replay stops here even if CUPTI asks for more

// A CUPTI parameter block: zeroed, its size set (CUPTI tells its versions apart by the size).
template <class Params>
Params cupti_params(std::size_t size) {
  Params p{};
  p.structSize = size;
  return p;
}

struct CuptiFailure {
  CUptiResult code;
  std::string call;
};

void check(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS) throw CuptiFailure{r, call};
}

bool is_refusal(CUptiResult r) {
  return r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES;
}

std::string describe(const CuptiFailure& f) {
  const char* text = nullptr;
  if (cuptiGetResultString(f.code, &text) != CUPTI_SUCCESS || !text) text = "unknown CUPTI error";
  if (f.code == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return fmt::format(
        "another profiling tool holds the GPU's counters (a debugger, compute-sanitizer or Nsight attached to the "
        "process; {}: {})",
        f.call, text);
  if (is_refusal(f.code))
    return fmt::format(
        "the driver restricts GPU performance counters to administrators ({}: {}; NVreg_RestrictProfilingToAdminUsers)",
        f.call, text);
  return fmt::format("{} failed: {} (CUPTI {})", f.call, text, int(f.code));
}

// The current device's context, initialised by the runtime; the driver call is found through the
// runtime so that tandem does not link libcuda itself.
CUcontext current_context() {
  TANDEM_CUDA(cudaFree(nullptr));
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  TANDEM_CUDA(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || !fn)
    throw CudaError("the driver has no cuCtxGetCurrent (needed to profile counters)");
  CUcontext ctx = nullptr;
  if (reinterpret_cast<CUresult (*)(CUcontext*)>(fn)(&ctx) != CUDA_SUCCESS || !ctx)
    throw CudaError("cuCtxGetCurrent failed after the runtime initialised the device");
  return ctx;
}

std::string chip_name() {
  int dev = 0;
  TANDEM_CUDA(cudaGetDevice(&dev));
  auto p = cupti_params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  p.deviceIndex = std::size_t(dev);
  check(cuptiDeviceGetChipName(&p), "cuptiDeviceGetChipName");
  return p.pChipName;
}

std::vector<std::uint8_t> counter_availability(CUcontext ctx) {
  auto p = cupti_params<CUpti_Profiler_GetCounterAvailability_Params>(
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
  p.ctx = ctx;
  check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
  std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  check(cuptiProfilerGetCounterAvailability(&p), "cuptiProfilerGetCounterAvailability");
  return image;
}

// The host side: metric names to a configuration image, counter data to values.
// It keeps the chip name and the availability image: the host object points into them.
class HostConfig {
 public:
  HostConfig(std::string chip, std::vector<std::uint8_t> availability)
      : chip_(std::move(chip)), availability_(std::move(availability)) {
    auto p = cupti_params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip_.c_str();
    p.pCounterAvailabilityImage = availability_.data();
    check(cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize");
    host_ = p.pHostObject;
  }
  ~HostConfig() {
    auto p = cupti_params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    p.pHostObject = host_;
    cuptiProfilerHostDeinitialize(&p);
  }
  HostConfig(const HostConfig&) = delete;
  HostConfig& operator=(const HostConfig&) = delete;

  std::vector<std::uint8_t> config_image(std::vector<const char*>& names) {
    auto add = cupti_params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host_;
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    check(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
    auto size = cupti_params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = host_;
    check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
    std::vector<std::uint8_t> image(size.configImageSize);
    auto get =
        cupti_params<CUpti_Profiler_Host_GetConfigImage_Params>(CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    get.pHostObject = host_;
    get.pConfigImage = image.data();
    get.configImageSize = image.size();
    check(cuptiProfilerHostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage");
    return image;
  }

  std::vector<double> evaluate(std::vector<std::uint8_t>& counter_data, std::vector<const char*>& names) {
    auto info = cupti_params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = counter_data.data();
    info.counterDataImageSize = counter_data.size();
    check(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");
    if (info.numTotalRanges == 0) throw CuptiFailure{CUPTI_ERROR_UNKNOWN, "the profiled range (no data collected)"};
    std::vector<double> values(names.size());
    auto p = cupti_params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    p.pHostObject = host_;
    p.pCounterDataImage = counter_data.data();
    p.counterDataImageSize = counter_data.size();
    p.rangeIndex = 0;
    p.ppMetricNames = names.data();
    p.numMetrics = names.size();
    p.pMetricValues = values.data();
    check(cuptiProfilerHostEvaluateToGpuValues(&p), "cuptiProfilerHostEvaluateToGpuValues");
    return values;
  }

 private:
  std::string chip_;
  std::vector<std::uint8_t> availability_;
  CUpti_Profiler_Host_Object* host_{nullptr};
};

// The target side: the range profiler on a context, one user range replayed by the caller. Closes
// whatever is open when it goes out of scope (an exception from the caller's launch included).
class RangeSession {
 public:
  explicit RangeSession(CUcontext ctx) {
    auto p = cupti_params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    p.ctx = ctx;
    check(cuptiRangeProfilerEnable(&p), "cuptiRangeProfilerEnable");
    obj_ = p.pRangeProfilerObject;
  }
  ~RangeSession() {
    if (in_range_) pop();
    if (started_) stop();
    auto p = cupti_params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = obj_;
    cuptiRangeProfilerDisable(&p);
  }
  RangeSession(const RangeSession&) = delete;
  RangeSession& operator=(const RangeSession&) = delete;

  std::vector<std::uint8_t> counter_data(std::vector<const char*>& names) {
    auto size = cupti_params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    size.pRangeProfilerObject = obj_;
    size.pMetricNames = names.data();
    size.numMetrics = names.size();
    size.maxNumOfRanges = 1;
    size.maxNumRangeTreeNodes = 1;
    check(cuptiRangeProfilerGetCounterDataSize(&size), "cuptiRangeProfilerGetCounterDataSize");
    std::vector<std::uint8_t> data(size.counterDataSize);
    auto init = cupti_params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init.pRangeProfilerObject = obj_;
    init.counterDataSize = data.size();
    init.pCounterData = data.data();
    check(cuptiRangeProfilerCounterDataImageInitialize(&init), "cuptiRangeProfilerCounterDataImageInitialize");
    return data;
  }

  void configure(const std::vector<std::uint8_t>& config, std::vector<std::uint8_t>& data) {
    auto p = cupti_params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = obj_;
    p.configSize = config.size();
    p.pConfig = config.data();
    p.counterDataImageSize = data.size();
    p.pCounterDataImage = data.data();
    p.range = CUPTI_UserRange;
    p.replayMode = CUPTI_UserReplay;
    p.maxRangesPerPass = 1;
    p.numNestingLevels = 1;
    p.minNestingLevel = 1;
    p.passIndex = 0;
    p.targetNestingLevel = 1;
    check(cuptiRangeProfilerSetConfig(&p), "cuptiRangeProfilerSetConfig");
  }

  // One pass: the range around launch(), the device synchronised on both sides. True when CUPTI
  // has every pass it needs.
  bool pass(const std::function<void()>& launch) {
    TANDEM_CUDA(cudaDeviceSynchronize());
    auto start = cupti_params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
    start.pRangeProfilerObject = obj_;
    check(cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart");
    started_ = true;
    auto push = cupti_params<CUpti_RangeProfiler_PushRange_Params>(CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
    push.pRangeProfilerObject = obj_;
    push.pRangeName = "range";
    check(cuptiRangeProfilerPushRange(&push), "cuptiRangeProfilerPushRange");
    in_range_ = true;
    launch();
    TANDEM_CUDA(cudaDeviceSynchronize());
    check(pop(), "cuptiRangeProfilerPopRange");
    auto p = cupti_params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = obj_;
    started_ = false;
    check(cuptiRangeProfilerStop(&p), "cuptiRangeProfilerStop");
    return p.isAllPassSubmitted != 0;
  }

  void decode() {
    auto p = cupti_params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = obj_;
    check(cuptiRangeProfilerDecodeData(&p), "cuptiRangeProfilerDecodeData");
  }

 private:
  CUptiResult pop() {
    in_range_ = false;
    auto p = cupti_params<CUpti_RangeProfiler_PopRange_Params>(CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = obj_;
    return cuptiRangeProfilerPopRange(&p);
  }
  void stop() {
    started_ = false;
    auto p = cupti_params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    p.pRangeProfilerObject = obj_;
    cuptiRangeProfilerStop(&p);
  }

  CUpti_RangeProfiler_Object* obj_{nullptr};
  bool started_{false}, in_range_{false};
};

void initialise_once() {
  if (g_initialised) return;
  auto p = cupti_params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
  check(cuptiProfilerInitialize(&p), "cuptiProfilerInitialize");
  g_initialised = true;
}

}  // namespace

CounterReading read_counters(const std::vector<std::string>& metrics, const std::function<void()>& launch,
                             const std::function<void()>& prepare) {
  const std::lock_guard lock(g_mutex);
  const Stopwatch w;
  CounterReading r;
  if (!g_refused.empty()) {
    r.unavailable = g_refused;
    return r;
  }
  if (metrics.empty()) {
    r.unavailable = "no metrics asked for";
    return r;
  }
  std::vector<const char*> names;
  for (const std::string& m : metrics) names.push_back(m.c_str());
  try {
    const CUcontext ctx = current_context();
    initialise_once();
    HostConfig host(chip_name(), counter_availability(ctx));
    const std::vector<std::uint8_t> config = host.config_image(names);
    RangeSession session(ctx);
    std::vector<std::uint8_t> data = session.counter_data(names);
    session.configure(config, data);
    bool done = false;
    while (!done) {
      if (r.passes == kMaxPasses)
        throw CuptiFailure{CUPTI_ERROR_UNKNOWN, fmt::format("replay ({} passes were not enough)", kMaxPasses)};
      if (prepare) prepare();
      done = session.pass(launch);
      ++r.passes;
    }
    session.decode();
    r.values = host.evaluate(data, names);
  } catch (const CuptiFailure& f) {
    r.values.clear();
    r.unavailable = describe(f);
    if (is_refusal(f.code)) g_refused = r.unavailable;
  }
  r.seconds = w.seconds();
  return r;
}

#else  // CPU-only build

CounterReading read_counters(const std::vector<std::string>&, const std::function<void()>&,
                             const std::function<void()>&) {
  CounterReading r;
  r.unavailable = "this build has no CUDA (hardware counters are read through CUPTI)";
  return r;
}

#endif

}  // namespace tandem
