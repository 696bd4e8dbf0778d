// The bitonic GPU launch shape tuned by hardware counters, end to end: the register bound holds,
// the report shows every candidate's time and counters with both picks and the tuning cost (or,
// where counters cannot be read, says why once and tunes by time), and the sort is correct.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "sort/bitonic/gpu.hpp"
#include "sort/bitonic/launch_choice.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/sort/bitonic.hpp"
#include "test_util.hpp"

using namespace tandem;
namespace bd = tandem::bitonic::detail;

namespace {

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

int regs_per_block() {
  int dev = 0, regs = 0;
  TANDEM_CUDA(cudaGetDevice(&dev));
  TANDEM_CUDA(cudaDeviceGetAttribute(&regs, cudaDevAttrMaxRegistersPerBlock, dev));
  return regs;
}

}  // namespace

TEST(GpuBitonicCounterTuning, ShapeWithinTheRegisterBoundAndReported) {
  TANDEM_REQUIRE_GPU();
  TuningCache::global().clear();
  Report r;
  std::string table;
  const auto c = bd::gpu_config<std::uint32_t>(std::size_t{1} << 20, {}, TuneSignal::counters, &table, &r);
  ASSERT_GT(c.block, 0);
  ASSERT_GT(c.elems, 0);
  const int regs = bd::tile_kernel_registers<std::uint32_t>(c.elems);
  EXPECT_LE(c.block, 1 << bd::register_bound_log2(regs_per_block(), regs)) << regs << " registers per thread";
  std::cout << table;
  if (mentions(r.notices, "could not be read")) {  // counters refused: time decided, said once
    EXPECT_EQ(std::count_if(r.notices.begin(), r.notices.end(),
                            [](const std::string& n) { return n.find("could not be read") != std::string::npos; }),
              1);
    EXPECT_NE(table.find("by time"), std::string::npos) << table;
    return;
  }
  EXPECT_NE(table.find("by hardware counters"), std::string::npos) << table;
  EXPECT_NE(table.find("<- counters"), std::string::npos) << table;
  EXPECT_NE(table.find("<- time"), std::string::npos) << table;
  EXPECT_NE(table.find("tuning cost"), std::string::npos) << table;
  const auto& t = r.details().at("gpu_tuning");
  ASSERT_GE(t.at("candidates").size(), 2u);  // one per vector length: 2, 4, 8, 16
  for (const auto& row : t.at("candidates")) {
    EXPECT_GT(row.at("alu_utilisation_pct").get<double>(), 0.0) << row.dump();
    EXPECT_GE(row.at("bank_conflicts").get<double>(), 0.0) << row.dump();
    EXPECT_GT(row.at("seconds").get<double>(), 0.0) << row.dump();
  }
  const auto& picked = t.at("candidates").at(t.at("by_counters").get<std::size_t>());
  EXPECT_EQ(picked.at("block").get<int>(), c.block);
  EXPECT_EQ(picked.at("elems").get<int>(), c.elems);
  EXPECT_GT(t.at("counter_seconds").get<double>(), 0.0);
  EXPECT_GT(t.at("timing_seconds").get<double>(), 0.0);
  // Cached under its own name: asked again, the same shape without measuring.
  Report again;
  const auto c2 = bd::gpu_config<std::uint32_t>(std::size_t{1} << 20, {}, TuneSignal::counters, nullptr, &again);
  EXPECT_EQ(c2.block, c.block);
  EXPECT_EQ(c2.elems, c.elems);
  EXPECT_FALSE(again.details().contains("gpu_tuning"));
}

TEST(GpuBitonicCounterTuning, SortTunedByCountersIsCorrect) {
  TANDEM_REQUIRE_GPU();
  TuningCache::global().clear();
  const std::size_t n = (std::size_t{1} << 20) + 3;
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = rng();
  std::vector<std::uint64_t> want = keys;
  std::sort(want.begin(), want.end());
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = Device::gpu;
  o.bitonic.tune_signal = TuneSignal::counters;
  const Report r = bitonic::sort(std::span<std::uint64_t>(keys), o);
  EXPECT_EQ(keys, want);
  EXPECT_TRUE(mentions(r.notes, "GPU tuning:\nby hardware counters") || mentions(r.notices, "could not be read"))
      << r.explain();
}
