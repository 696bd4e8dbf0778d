// mean: the double sum over the count.
#include "groupby/ops/mean.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpMean, MeanOfPresentValues) {
  for (const auto r : op_test::split_results<MeanOp<std::int32_t>>(std::vector<std::int32_t>{1, 2, 6}))
    EXPECT_EQ(*r, 3.0);
  EXPECT_FALSE(MeanOp<float>::finalise(MeanOp<float>::identity()).has_value());
}
