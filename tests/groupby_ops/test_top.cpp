// top: the n largest values, largest first; missing where the group has fewer.
#include "groupby/ops/top.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpTop, LargestFirstAndMissingBeyondTheGroup) {
  const auto r = op_test::compute<TopOp<int>>(std::vector<int>{3, 9, 1, 9}, op_test::with_n(3));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(*r[0], 9);
  EXPECT_EQ(*r[1], 9);
  EXPECT_EQ(*r[2], 3);
  const auto few = op_test::compute<TopOp<double>>(std::vector<double>{1, NAN}, op_test::with_n(3));
  EXPECT_TRUE(std::isnan(*few[0]));  // NaN sorts above every number
  EXPECT_EQ(*few[1], 1.0);
  EXPECT_FALSE(few[2].has_value());
}
