// Internal: a GPU's total-energy counter (NVML, millijoules since the driver loaded).
//
// NVML is opened at run time (dlopen of the driver's libnvidia-ml.so.1), so that tandem builds
// where the NVML header is not installed and its binaries start on machines without a driver.
// Absent library, unknown device or a counter the GPU does not support leave the counter
// unavailable, with the reason in why(); nothing throws for that.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace tandem {

class EnergyCounter {
 public:
  // The GPU with this PCI bus id ("0000:65:00.0", as cudaDeviceGetPCIBusId writes it).
  explicit EnergyCounter(const std::string& pci_bus_id);
  ~EnergyCounter();
  EnergyCounter(const EnergyCounter&) = delete;
  EnergyCounter& operator=(const EnergyCounter&) = delete;

  bool available() const { return device_ != nullptr; }
  const std::string& why() const { return why_; }  // empty when available
  // The counter now (millijoules). Error when unavailable or when the read fails.
  std::uint64_t millijoules() const;

 private:
  struct Api;
  void* lib_{nullptr};
  std::unique_ptr<Api> api_;
  void* device_{nullptr};
  bool initialised_{false};
  std::string why_;
};

// Joules per run from two counter readings around `runs` runs. Error (naming the fields) when
// runs is 0 or the counter went backwards; NaN when it did not move (below its resolution).
double joules_per_run(std::uint64_t before_mj, std::uint64_t after_mj, std::uint64_t runs);

}  // namespace tandem
