// first: the first value in row order, also when the earlier rows' state saw nothing.
#include "groupby/ops/first.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpFirst, KeepsTheEarliestValue) {
  for (const auto r : op_test::split_results<FirstOp<double>>(std::vector<double>{NAN, 2, 3}))
    EXPECT_TRUE(std::isnan(*r));
  for (const auto r : op_test::split_results<FirstOp<std::string_view>>(std::vector<std::string_view>{"x", "", "y"}))
    EXPECT_EQ(*r, "x");
  EXPECT_FALSE(FirstOp<int>::finalise(FirstOp<int>::identity()).has_value());
}
