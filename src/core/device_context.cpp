#include "core/device_context.hpp"

namespace tandem::detail {

namespace {
// Never destroyed: its parts free device memory, and CUDA may be torn down before static
// destructors run.
DeviceContexts* const library = new DeviceContexts;
}  // namespace

DeviceContexts& library_devices() { return *library; }

}  // namespace tandem::detail
