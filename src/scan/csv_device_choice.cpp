// auto's choice for a CSV group-by (csv_device_choice.hpp).
#include "scan/csv_device_choice.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace tandem::scan {
namespace {

constexpr double kCpuFixedSeconds = 0.05;
constexpr double kCpuBytesPerSecondPerThread = 270e6;
constexpr double kGpuFixedSeconds = 0.27;
constexpr double kGpuBytesPerSecond = 16e9;
constexpr double kMargin = 0.9;  // the GPU only where it is estimated 10 % faster

}  // namespace

CsvDeviceEstimate estimate_csv_groupby(std::size_t bytes, int threads, bool gpu_usable) {
  CsvDeviceEstimate e;
  const double b = static_cast<double>(bytes);
  e.cpu_seconds = kCpuFixedSeconds + b / (kCpuBytesPerSecondPerThread * std::max(1, threads));
  e.gpu_seconds = kGpuFixedSeconds + b / kGpuBytesPerSecond;
  e.gpu = gpu_usable && e.gpu_seconds <= kMargin * e.cpu_seconds;
  return e;
}

std::string CsvDeviceEstimate::describe() const {
  return fmt::format("device auto: estimated CPU {:.2f} s, GPU {:.2f} s: {}", cpu_seconds, gpu_seconds,
                     gpu ? "the GPU" : "the CPU");
}

}  // namespace tandem::scan
