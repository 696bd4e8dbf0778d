// A GPU's total-energy counter through NVML, opened at run time (see energy_counter.hpp).
#include "core/energy_counter.hpp"

#include <dlfcn.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem {

namespace {
// The few NVML entry points used, with the C signatures of nvml.h (a stable ABI): results are
// nvmlReturn_t (0 = NVML_SUCCESS), devices opaque handles.
using nvml_return = int;
constexpr nvml_return kNvmlSuccess = 0;
constexpr nvml_return kNvmlNotSupported = 3;
using InitFn = nvml_return (*)();
using ShutdownFn = nvml_return (*)();
using ErrorStringFn = const char* (*)(nvml_return);
using HandleByBusIdFn = nvml_return (*)(const char*, void**);
using TotalEnergyFn = nvml_return (*)(void*, unsigned long long*);
}  // namespace

struct EnergyCounter::Api {
  InitFn init{nullptr};
  ShutdownFn shutdown{nullptr};
  ErrorStringFn error_string{nullptr};
  HandleByBusIdFn handle_by_bus_id{nullptr};
  TotalEnergyFn total_energy{nullptr};
  std::string error(nvml_return r) const {
    return error_string ? fmt::format("{} (NVML {})", error_string(r), r) : fmt::format("NVML error {}", r);
  }
};

EnergyCounter::EnergyCounter(const std::string& pci_bus_id) : api_(std::make_unique<Api>()) {
  lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    why_ = "NVML not found (libnvidia-ml.so.1 of the NVIDIA driver)";
    return;
  }
  auto sym = [&](const char* name) { return ::dlsym(lib_, name); };
  api_->init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  api_->shutdown = reinterpret_cast<ShutdownFn>(sym("nvmlShutdown"));
  api_->error_string = reinterpret_cast<ErrorStringFn>(sym("nvmlErrorString"));
  api_->handle_by_bus_id = reinterpret_cast<HandleByBusIdFn>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  api_->total_energy = reinterpret_cast<TotalEnergyFn>(sym("nvmlDeviceGetTotalEnergyConsumption"));
  if (!api_->init || !api_->shutdown || !api_->handle_by_bus_id || !api_->total_energy) {
    why_ = "NVML has no total-energy counter (driver too old)";
    return;
  }
  if (const nvml_return r = api_->init(); r != kNvmlSuccess) {
    why_ = "NVML did not initialise: " + api_->error(r);
    return;
  }
  initialised_ = true;
  void* dev = nullptr;
  if (const nvml_return r = api_->handle_by_bus_id(pci_bus_id.c_str(), &dev); r != kNvmlSuccess) {
    why_ = fmt::format("NVML has no GPU at PCI bus id '{}': {}", pci_bus_id, api_->error(r));
    return;
  }
  unsigned long long mj = 0;
  if (const nvml_return r = api_->total_energy(dev, &mj); r != kNvmlSuccess) {
    why_ = r == kNvmlNotSupported
               ? fmt::format("the GPU at {} has no total-energy counter", pci_bus_id)
               : fmt::format("reading the energy counter of {} failed: {}", pci_bus_id, api_->error(r));
    return;
  }
  device_ = dev;
}

EnergyCounter::~EnergyCounter() {
  if (initialised_) api_->shutdown();
  if (lib_) ::dlclose(lib_);
}

std::uint64_t EnergyCounter::millijoules() const {
  if (!device_) throw Error("energy counter unavailable: " + why_);
  unsigned long long mj = 0;
  if (const nvml_return r = api_->total_energy(device_, &mj); r != kNvmlSuccess)
    throw Error("reading the GPU energy counter failed: " + api_->error(r));
  return mj;
}

double joules_per_run(std::uint64_t before_mj, std::uint64_t after_mj, std::uint64_t runs) {
  if (runs == 0) throw UsageError("energy per run: runs = 0");
  if (after_mj < before_mj)
    throw Error(fmt::format("energy counter went backwards: before_mj = {}, after_mj = {}", before_mj, after_mj));
  if (after_mj == before_mj) return std::numeric_limits<double>::quiet_NaN();
  return double(after_mj - before_mj) * 1e-3 / double(runs);
}

}  // namespace tandem
