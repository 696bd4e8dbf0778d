// One home for what the library keeps per device between calls. A device's context holds one
// part per kind of state, each an object of its own type made on first use: a pool of engines
// (core/device_pool.hpp), the hash group-by's workspaces and device properties, the sort's
// workspace, the kernels' shared-memory limits (core/shared_limits.hpp). The library's contexts
// live in one registry, library_devices(), never destroyed: the parts free device memory, and
// CUDA may be torn down before static destructors run.
// Pure C++ but for current_device(): callers name the device, so the registry is CPU-tested.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <typeindex>
#include <typeinfo>

#if TANDEM_HAS_CUDA
#include <cuda_runtime.h>

#include "tandem/cuda/runtime.hpp"
#endif

namespace tandem::detail {

class DeviceContext {
 public:
  explicit DeviceContext(int device) : device_(device) {}
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  int device() const { return device_; }

  // This device's T, made on first use by make(device) (a std::unique_ptr<T>); later calls return
  // the same object. Safe from several threads at once: one T is made (under the context's lock,
  // so make must not ask this context for another part). T decides how its users share it.
  template <class T, class Make>
  T& part(Make&& make) {
    std::lock_guard lock(mu_);
    std::shared_ptr<void>& p = parts_[std::type_index(typeid(T))];
    if (!p) p = std::shared_ptr<T>(make(device_));
    return *static_cast<T*>(p.get());
  }
  template <class T>
  T& part() {
    return part<T>([](int) { return std::make_unique<T>(); });
  }

 private:
  int device_;
  std::mutex mu_;
  std::map<std::type_index, std::shared_ptr<void>> parts_;
};

// Device contexts by device id, each made on first use. Safe to share between host threads.
class DeviceContexts {
 public:
  DeviceContext& device(int id) {
    std::lock_guard lock(mu_);
    std::unique_ptr<DeviceContext>& d = devices_[id];
    if (!d) d = std::make_unique<DeviceContext>(id);
    return *d;
  }

 private:
  std::mutex mu_;
  std::map<int, std::unique_ptr<DeviceContext>> devices_;
};

// The contexts of the library's GPU engines (tests and benchmarks may make their own).
DeviceContexts& library_devices();

#if TANDEM_HAS_CUDA
// The context of the calling thread's current device.
inline DeviceContext& current_device(DeviceContexts& devices = library_devices()) {
  int id = 0;
  TANDEM_CUDA(cudaGetDevice(&id));
  return devices.device(id);
}
#endif

}  // namespace tandem::detail
