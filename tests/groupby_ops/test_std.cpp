// std: the square root of the sample variance.
#include "groupby/ops/std.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpStd, SquareRootOfTheSampleVariance) {
  for (const auto r : op_test::split_results<StdOp<float>>(std::vector<float>{1, 3}))
    EXPECT_NEAR(*r, std::sqrt(2.0), 1e-12);
  EXPECT_FALSE(StdOp<float>::finalise(StdOp<float>::identity()).has_value());
}
