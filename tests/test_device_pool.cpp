// The per-device pool behind the GPU engines: an object is lent to one caller at a time, stays
// with its device, is reused after its lease ends, and is dropped when its user threw.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/device_pool.hpp"

using tandem::detail::DevicePool;

namespace {
struct Engine {
  int device{-1};
  std::atomic<int> users{0};
  int calls{0};
};
}  // namespace

TEST(DevicePool, ReusesPerDevice) {
  DevicePool<Engine> pool;
  Engine* first = nullptr;
  {
    auto a = pool.borrow(0);
    a->device = 0;
    first = &*a;
    auto b = pool.borrow(0);  // a is busy: a second object
    EXPECT_NE(&*b, first);
    auto c = pool.borrow(1);
    c->device = 1;
  }
  EXPECT_EQ(pool.idle(0), 2u);
  EXPECT_EQ(pool.idle(1), 1u);
  auto again = pool.borrow(1);
  EXPECT_EQ(again->device, 1) << "device 1 gets its own object back, never device 0's";
  EXPECT_EQ(pool.idle(1), 0u);
}

TEST(DevicePool, ObjectOfAThrowingUserIsDropped) {
  DevicePool<Engine> pool;
  try {
    auto a = pool.borrow(0);
    throw std::runtime_error("engine failed half-way");
  } catch (const std::runtime_error&) {}
  EXPECT_EQ(pool.idle(0), 0u);
  { auto b = pool.borrow(0); }
  EXPECT_EQ(pool.idle(0), 1u);
}

TEST(DevicePool, NeverLendsOneObjectToTwoThreads) {
  DevicePool<Engine> pool;
  std::atomic<int> shared{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        auto e = pool.borrow(t % 2);
        if (e->users.fetch_add(1) != 0) ++shared;
        if (e->device >= 0 && e->device != t % 2) ++shared;
        e->device = t % 2;
        ++e->calls;
        e->users.fetch_sub(1);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(shared.load(), 0);
  EXPECT_LE(pool.idle(0) + pool.idle(1), 8u);
}
