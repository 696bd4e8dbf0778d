#include "groupby/hash/context.hpp"

#include "tandem/cuda/runtime.hpp"

namespace tandem::hash_groupby {

DeviceContext::DeviceContext(int device) {
  int sms = 0, optin = 0, l2 = 0;
  TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TANDEM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  TANDEM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  props_ = DeviceProps{device, sms, static_cast<std::size_t>(optin), static_cast<std::size_t>(l2)};
}

Context::Context() : own_(std::make_unique<::tandem::detail::DeviceContexts>()), devices_(own_.get()) {}

namespace {
DeviceContext& hash_part(::tandem::detail::DeviceContext& device) {
  return device.part<DeviceContext>([](int id) { return std::make_unique<DeviceContext>(id); });
}
}  // namespace

DeviceContext& Context::device(int id) { return hash_part(devices_->device(id)); }

DeviceContext& Context::current() { return hash_part(::tandem::detail::current_device(*devices_)); }

Context library_context() { return Context(::tandem::detail::library_devices()); }

}  // namespace tandem::hash_groupby
