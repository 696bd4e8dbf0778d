// quantile: linear interpolation between the order statistics around q·(n − 1).
#include "groupby/ops/quantile.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpQuantile, InterpolatesBetweenOrderStatistics) {
  const std::vector<std::int64_t> v{10, 40, 20, 30};
  EXPECT_EQ(*op_test::compute<QuantileOp<std::int64_t>>(v, op_test::with_q(0))[0], 10.0);
  EXPECT_EQ(*op_test::compute<QuantileOp<std::int64_t>>(v, op_test::with_q(1))[0], 40.0);
  EXPECT_DOUBLE_EQ(*op_test::compute<QuantileOp<std::int64_t>>(v, op_test::with_q(0.25))[0], 17.5);
  EXPECT_DOUBLE_EQ(*op_test::compute<QuantileOp<float>>(std::vector<float>{-0.0f, 2}, op_test::with_q(0.5))[0], 1.0);
}
