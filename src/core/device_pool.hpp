// Objects kept per device and lent to one caller at a time: the GPU engines and their buffers. A
// caller borrows an idle object of its device (or a new one) and the lease gives it back, so host
// threads never share an object and no device sees another device's buffers. Pure C++: the
// caller names the device (cudaGetDevice), so the pool is tested on the CPU.
#pragma once
#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace tandem::detail {

template <class T>
class DevicePool {
 public:
  class Lease {
   public:
    Lease(DevicePool* pool, int device, std::unique_ptr<T> obj)
        : pool_(pool), device_(device), obj_(std::move(obj)), exceptions_(std::uncaught_exceptions()) {}
    Lease(Lease&& o) noexcept
        : pool_(std::exchange(o.pool_, nullptr)),
          device_(o.device_),
          obj_(std::move(o.obj_)),
          exceptions_(o.exceptions_) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    // An object whose user is unwinding from an exception may hold half-made state: dropped.
    ~Lease() {
      if (pool_ && obj_ && std::uncaught_exceptions() == exceptions_) pool_->give_back(device_, std::move(obj_));
    }
    T& operator*() const { return *obj_; }
    T* operator->() const { return obj_.get(); }

   private:
    DevicePool* pool_;
    int device_;
    std::unique_ptr<T> obj_;
    int exceptions_;
  };

  Lease borrow(int device) {
    {
      std::lock_guard lock(mu_);
      auto& v = idle_[device];
      if (!v.empty()) {
        auto obj = std::move(v.back());
        v.pop_back();
        return Lease(this, device, std::move(obj));
      }
    }
    return Lease(this, device, std::make_unique<T>());
  }

  // Objects of `device` waiting to be lent.
  std::size_t idle(int device) const {
    std::lock_guard lock(mu_);
    auto it = idle_.find(device);
    return it == idle_.end() ? 0 : it->second.size();
  }

 private:
  void give_back(int device, std::unique_ptr<T> obj) {
    std::lock_guard lock(mu_);
    idle_[device].push_back(std::move(obj));
  }

  mutable std::mutex mu_;
  std::map<int, std::vector<std::unique_ptr<T>>> idle_;
};

}  // namespace tandem::detail
