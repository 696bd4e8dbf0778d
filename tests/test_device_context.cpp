// The per-device contexts behind the GPU engines (core/device_context.hpp): one context per device,
// one object per part type in it, made once even when threads ask at once, and engines borrowed
// from a pool part the way the chained engine's callers borrow them. Then a device's kernel
// shared-memory limits (core/shared_limits.hpp): raised, never lowered, under concurrent callers.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/device_context.hpp"
#include "core/device_pool.hpp"
#include "core/shared_limits.hpp"

using tandem::detail::DeviceContext;
using tandem::detail::DeviceContexts;
using tandem::detail::DevicePool;
using tandem::detail::SharedLimits;

namespace {
// A part that counts how often one was made.
struct Made {
  static inline std::atomic<int> count{0};
  int device;
  explicit Made(int d) : device(d) { ++count; }
};
struct Other {
  int value{7};
};
struct Engine {
  std::atomic<int> users{0};
};
}  // namespace

TEST(DeviceContexts, OneContextPerDevice) {
  DeviceContexts all;
  DeviceContext& a = all.device(0);
  DeviceContext& b = all.device(1);
  EXPECT_EQ(&all.device(0), &a);
  EXPECT_NE(&a, &b);
  EXPECT_EQ(a.device(), 0);
  EXPECT_EQ(b.device(), 1);
  EXPECT_EQ(&tandem::detail::library_devices(), &tandem::detail::library_devices());
}

TEST(DeviceContexts, OnePartPerTypeMadeWithItsDevice) {
  DeviceContexts all;
  auto make = [](int d) { return std::make_unique<Made>(d); };
  Made& m = all.device(3).part<Made>(make);
  EXPECT_EQ(m.device, 3);
  EXPECT_EQ(&all.device(3).part<Made>(make), &m);
  EXPECT_NE(&all.device(4).part<Made>(make), &m);
  Other& o = all.device(3).part<Other>();
  EXPECT_EQ(o.value, 7);
  EXPECT_NE(static_cast<void*>(&o), static_cast<void*>(&m));
}

TEST(DeviceContexts, PartWhoseMakingThrewIsMadeAgain) {
  DeviceContext d(0);
  EXPECT_THROW(d.part<Other>([](int) -> std::unique_ptr<Other> { throw std::runtime_error("no device"); }),
               std::runtime_error);
  EXPECT_EQ(d.part<Other>().value, 7);
}

TEST(DeviceContexts, ThreadsAskingAtOnceGetOnePart) {
  DeviceContexts all;
  Made::count = 0;
  std::vector<Made*> got(8);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i)
        got[t] = &all.device(t % 2).part<Made>([](int d) { return std::make_unique<Made>(d); });
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(Made::count.load(), 2);
  for (int t = 0; t < 8; ++t) {
    EXPECT_EQ(got[t], got[t % 2]);
    EXPECT_EQ(got[t]->device, t % 2);
  }
}

// As borrow_engine() does: each caller borrows an engine from its device's pool part, so no
// engine serves two threads at once and engines are kept for the next calls.
TEST(DeviceContexts, EnginesFromThePoolPartAreNeverShared) {
  DeviceContexts all;
  std::atomic<int> shared{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        DeviceContext& d = all.device(t % 2);
        auto e = d.part<DevicePool<Engine>>().borrow(d.device());
        if (e->users.fetch_add(1) != 0) ++shared;
        e->users.fetch_sub(1);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(shared.load(), 0);
  for (int dev : {0, 1}) {
    const std::size_t idle = all.device(dev).part<DevicePool<Engine>>().idle(dev);
    EXPECT_GE(idle, 1u);
    EXPECT_LE(idle, 4u);  // at most one per thread of the device
  }
}

TEST(SharedLimits, RaisedPerKernelNeverLowered) {
  SharedLimits limits;
  const int k1 = 0, k2 = 0;  // two kernels' addresses
  std::vector<std::size_t> set1, set2;
  auto on1 = [&](std::size_t b) { set1.push_back(b); };
  auto on2 = [&](std::size_t b) { set2.push_back(b); };
  limits.allow(&k1, 1000, on1);
  limits.allow(&k1, 500, on1);  // already allowed: nothing set
  limits.allow(&k1, 1000, on1);
  limits.allow(&k1, 4000, on1);
  limits.allow(&k2, 200, on2);
  EXPECT_EQ(set1, (std::vector<std::size_t>{1000, 4000}));
  EXPECT_EQ(set2, (std::vector<std::size_t>{200}));
}

TEST(SharedLimits, AKernelWhoseSettingFailedIsSetAgain) {
  SharedLimits limits;
  const int k = 0;
  EXPECT_THROW(limits.allow(&k, 100, [](std::size_t) { throw std::runtime_error("invalid value"); }),
               std::runtime_error);
  int calls = 0;
  limits.allow(&k, 100, [&](std::size_t) { ++calls; });
  EXPECT_EQ(calls, 1);
}

// Threads asking one kernel for different sizes at once: the attribute only ever grows, and ends
// at the largest size asked.
TEST(SharedLimits, ConcurrentCallersOnlyRaise) {
  SharedLimits limits;
  const int k = 0;
  std::size_t attribute = 0;  // written only by set, which runs under the limits' lock
  std::atomic<int> lowered{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i)
        limits.allow(&k, std::size_t(1 + (i * 7 + t * 13) % 97) * 1024, [&](std::size_t b) {
          if (b <= attribute) ++lowered;
          attribute = b;
        });
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(lowered.load(), 0);
  EXPECT_EQ(attribute, std::size_t(97) * 1024);
}
