// The dynamic shared-memory limit of each kernel on one device, only ever raised. The limit is an
// attribute of the kernel on the device, shared by every host thread: a thread lowering it between
// another thread's setting and launch would fail that launch. Pure C++ (the caller passes what
// sets the attribute), so it is tested on the CPU; one per device, a part of its context.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>

namespace tandem::detail {

class SharedLimits {
 public:
  // Makes kernel's limit at least `bytes`: calls set(bytes) when it is lower (under the lock, so
  // two raises of one kernel never cross).
  template <class Set>
  void allow(const void* kernel, std::size_t bytes, Set&& set) {
    std::lock_guard lock(mu_);
    std::size_t& limit = limits_[kernel];
    if (bytes <= limit) return;
    set(bytes);
    limit = bytes;
  }

 private:
  std::mutex mu_;
  std::map<const void*, std::size_t> limits_;
};

}  // namespace tandem::detail
