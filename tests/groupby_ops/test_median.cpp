// median: the middle value, or the mean of the two middle values; NaN sorts last.
#include "groupby/ops/median.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpMedian, MiddleOfTheSortedValues) {
  EXPECT_EQ(*op_test::compute<MedianOp<int>>(std::vector<int>{5, 1, 3})[0], 3.0);
  EXPECT_EQ(*op_test::compute<MedianOp<int>>(std::vector<int>{4, 1, 3, 2})[0], 2.5);
  EXPECT_EQ(*op_test::compute<MedianOp<double>>(std::vector<double>{NAN, 1, 2})[0], 2.0);
  EXPECT_FALSE(op_test::compute<MedianOp<float>>(std::vector<float>{})[0].has_value());
}
