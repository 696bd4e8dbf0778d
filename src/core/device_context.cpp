#include "core/device_context.hpp"

#include "core/shared_limits.hpp"
#include "tandem/cuda/launch.hpp"

namespace tandem::detail {

namespace {
// Never destroyed: its parts free device memory, and CUDA may be torn down before static
// destructors run.
DeviceContexts* const library = new DeviceContexts;
}  // namespace

DeviceContexts& library_devices() { return *library; }

}  // namespace tandem::detail

#if TANDEM_HAS_CUDA
namespace tandem::gpu {

void allow_dynamic_shared(const void* kernel, std::size_t bytes) {
  detail::current_device().part<detail::SharedLimits>().allow(kernel, bytes, [&](std::size_t b) {
    TANDEM_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(b)));
  });
}

}  // namespace tandem::gpu
#endif
