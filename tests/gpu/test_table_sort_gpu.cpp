// The GPU table sort (host tables with device = gpu, and DeviceTables) against the CPU table
// sort on the same random tables: both are stable, so the row orders must be identical.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "table_sort_cases.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/device_table.hpp"
#include "tandem/table_sort.hpp"

using namespace table_sort_cases;

namespace {

tandem::TableSortOptions on(tandem::Device d, bool nan_missing = false) {
  tandem::TableSortOptions o;
  o.device = d;
  o.nan_is_missing = nan_missing;
  return o;
}

#define SKIP_WITHOUT_GPU() \
  if (tandem::gpu_count() == 0) GTEST_SKIP() << "no GPU"

void expect_gpu_matches_cpu(const Case& c, bool nan_missing, const std::string& what) {
  const auto cpu = tandem::argsort(c.table, c.spec, on(tandem::Device::cpu, nan_missing));
  const auto gpu = tandem::argsort(c.table, c.spec, on(tandem::Device::gpu, nan_missing));
  ASSERT_EQ(gpu.rows, cpu.rows) << what;
  const auto want = c.table.gather(cpu.rows);
  expect_same_tables(tandem::sort(c.table, c.spec, on(tandem::Device::gpu, nan_missing)).table, want);
  tandem::DeviceTable d(c.table);
  auto sorted = tandem::sort(d, c.spec, on(tandem::Device::gpu, nan_missing));
  ASSERT_EQ(sorted.table.rows(), want.rows()) << what;
  expect_same_tables(sorted.table.host(), want);
}

}  // namespace

TEST(TableSortGpu, RandomTablesMatchTheCpuSort) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(4646);
  for (int round = 0; round < 120; ++round) {
    const std::size_t n = round % 4 == 0 ? rng() % 5 : rng() % 3000;
    const auto c = random_case(rng, n);
    expect_gpu_matches_cpu(c, round % 5 == 0, "round " + std::to_string(round));
    if (HasFatalFailure()) return;
  }
}

TEST(TableSortGpu, LimitKeepsTheFirstRows) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(17);
  for (int round = 0; round < 20; ++round) {
    auto c = random_case(rng, 1 + rng() % 2000);
    c.spec.limit = rng() % 50;
    expect_gpu_matches_cpu(c, false, "round " + std::to_string(round));
    if (HasFatalFailure()) return;
  }
}

TEST(TableSortGpu, LargeTablesMatchTheCpuSort) {
  SKIP_WITHOUT_GPU();
  if (std::getenv("TANDEM_SANITIZER")) GTEST_SKIP() << "large; skipped under the sanitizer";
  std::mt19937_64 rng(99);
  for (int round = 0; round < 3; ++round) {
    const auto c = random_case(rng, 3'000'000 + rng() % 1000);
    expect_gpu_matches_cpu(c, false, "round " + std::to_string(round));
    if (HasFatalFailure()) return;
  }
}

TEST(TableSortGpu, EqualKeysKeepInputOrderAndMissingKeysCount) {
  SKIP_WITHOUT_GPU();
  Table t;
  t.add(tandem::make_column("same", std::vector<std::int64_t>(1000, 7)));
  t.add(tandem::make_column("none", std::vector<double>(1000, 1.0), std::vector<std::uint8_t>(125, 0)));
  std::vector<std::int64_t> payload(1000);
  std::iota(payload.begin(), payload.end(), 0);
  t.add(tandem::make_column("payload", payload));
  for (const auto nulls : {NullOrder::last, NullOrder::first}) {
    SortSpec spec{.by = {{"same"}, {"none", tandem::descending}}, .nulls = nulls};
    const auto r = tandem::argsort(t, spec, on(tandem::Device::gpu));
    std::vector<std::size_t> identity(1000);
    std::iota(identity.begin(), identity.end(), 0);
    EXPECT_EQ(r.rows, identity);
  }
  // One row and no rows.
  Table one;
  one.add(tandem::make_column("k", std::vector<float>{-0.0f}));
  EXPECT_EQ(tandem::argsort(one, {.by = {{"k"}}}, on(tandem::Device::gpu)).rows, std::vector<std::size_t>{0});
  Table none;
  none.add(tandem::make_column("k", std::vector<std::int32_t>{}));
  EXPECT_TRUE(tandem::argsort(none, {.by = {{"k"}}}, on(tandem::Device::gpu)).rows.empty());
  tandem::DeviceTable d(none);
  EXPECT_EQ(tandem::sort(d, {.by = {{"k"}}}).table.rows(), 0u);
}

TEST(TableSortGpu, BadKeysNameTheColumn) {
  SKIP_WITHOUT_GPU();
  Table t;
  t.add(tandem::make_column("k", std::vector<std::int32_t>{3, 1, 2}));
  try {
    tandem::argsort(t, {.by = {{"nope"}}}, on(tandem::Device::gpu));
    FAIL() << "no error";
  } catch (const tandem::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
  tandem::DeviceTable d(t);
  EXPECT_THROW(tandem::sort(d, {.by = {{"nope"}}}), tandem::UsageError);
}
