// Hardware counters without CUDA: the reading says why it has no values instead of throwing, so
// callers fall back to time (the reading itself is tested on a GPU in tests/gpu/).
#include <gtest/gtest.h>

#include "core/counter_profiler.hpp"

using namespace tandem;

TEST(CounterProfiler, CpuBuildSaysWhyNothingWasRead) {
  if (TANDEM_HAS_CUDA) GTEST_SKIP() << "a CUDA build reads counters (tests/gpu/test_counter_profiler.cu)";
  bool launched = false;
  const CounterReading r = read_counters({metric::instructions}, [&] { launched = true; });
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.values.empty());
  EXPECT_NE(r.unavailable.find("no CUDA"), std::string::npos) << r.unavailable;
  EXPECT_FALSE(launched);
}
