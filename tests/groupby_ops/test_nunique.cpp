// nunique: distinct values, equal as keys are.
#include "groupby/ops/nunique.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpNunique, CountsDistinctValuesAsKeysCompare) {
  EXPECT_EQ(*op_test::compute<NuniqueOp<double>>(std::vector<double>{0.0, -0.0, NAN, -NAN, 1, 1})[0], 3);
  EXPECT_EQ(*op_test::compute<NuniqueOp<std::string_view>>(std::vector<std::string_view>{"", "a", "", "b"})[0], 3);
  EXPECT_EQ(*op_test::compute<NuniqueOp<int>>(std::vector<int>{})[0], 0);
}
