// Public headers on their own: the capability headers do not pull all of nlohmann/json into their
// users (Report declares its details with json_fwd.hpp), and tandem/tandem.hpp alone is enough to
// use the library.
#include "tandem/index.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/schedule.hpp"
#include "tandem/sort.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/topk.hpp"

#ifdef INCLUDE_NLOHMANN_JSON_HPP_
#error "a capability header includes all of nlohmann/json"
#endif

#include "tandem/tandem.hpp"

#include <gtest/gtest.h>

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
