// Public headers on their own: the capability headers do not pull all of nlohmann/json into their
// users (Report declares its details with json_fwd.hpp), and tandem/tandem.hpp alone is enough to
// use the library.
#include "tandem/groupby.hpp"
#include "tandem/index.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/schedule.hpp"
#include "tandem/sort.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/table.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table/files.hpp"
#include "tandem/topk.hpp"

#ifdef INCLUDE_NLOHMANN_JSON_HPP_
#error "a capability header includes all of nlohmann/json"
#endif

#include "tandem/tandem.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <vector>

TEST(Umbrella, OneIncludeSortsAndReports) {
  std::vector<int> v{3, -1, 2};
  tandem::SortOptions o;
  o.device = tandem::Device::cpu;
  const tandem::Report r = tandem::sort(std::span<int>(v), o);
  EXPECT_EQ(v, (std::vector<int>{-1, 2, 3}));
  EXPECT_EQ(r.operation, "sort");
  EXPECT_EQ(tandem::parse_device("gpu"), tandem::Device::gpu);
  EXPECT_EQ(tandem::gpu::grid_for(1000, 256, 8), 4u);
}

TEST(Umbrella, OneIncludeGroupsATable) {
  tandem::Table t;
  t.add(tandem::make_column("k", std::vector<std::int64_t>{1, 2, 1}));
  t.add(tandem::make_column("v", std::vector<double>{1.5, 2, 3}));
  tandem::GroupByOptions o;
  o.device = tandem::Device::cpu;
  const auto r = tandem::groupby(t, {{"k"}, tandem::parse_aggregations("sum(v)")}, o);
  EXPECT_EQ(r.table.rows(), 2u);
}
