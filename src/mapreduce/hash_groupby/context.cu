#include "mapreduce/hash_groupby/context.hpp"

#include "tandem/cuda/runtime.hpp"

namespace tandem::mapreduce::hash_groupby {

DeviceContext::DeviceContext(int device) {
  int sms = 0, optin = 0, l2 = 0;
  TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  TANDEM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  TANDEM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  props_ = DeviceProps{device, sms, static_cast<std::size_t>(optin), static_cast<std::size_t>(l2)};
}

void DeviceContext::allow_shared(const void* kernel, std::size_t bytes) {
  std::lock_guard lock(mu_);
  std::size_t& limit = shared_limit_[kernel];
  if (bytes <= limit) return;
  TANDEM_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  limit = bytes;
}

DeviceContext& Context::device(int id) {
  std::lock_guard lock(mu_);
  auto& d = devices_[id];
  if (!d) d = std::make_unique<DeviceContext>(id);
  return *d;
}

DeviceContext& Context::current() {
  int id = 0;
  TANDEM_CUDA(cudaGetDevice(&id));
  return device(id);
}

namespace {
// Never destroyed: CUDA may be torn down before static destructors run.
Context* const library = new Context;
}  // namespace

Context& library_context() { return *library; }

}  // namespace tandem::mapreduce::hash_groupby
