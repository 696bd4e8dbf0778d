// var: the sample variance by Welford's update and Chan's merge.
#include "groupby/ops/var.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpVar, SampleVarianceStaysAccurateFarFromZero) {
  for (const auto r : op_test::split_results<VarOp<std::int32_t>>(std::vector<std::int32_t>{2, 4, 4, 4, 5, 5, 7, 9}))
    EXPECT_NEAR(*r, 32.0 / 7, 1e-12);
  // A sum of squares minus the squared sum loses every digit here.
  const double big = 1e9;
  for (const auto r : op_test::split_results<VarOp<double>>(std::vector<double>{big + 4, big + 7, big + 13, big + 16}))
    EXPECT_NEAR(*r, 30.0, 1e-6);
  EXPECT_FALSE(VarOp<double>::finalise(op_test::fold<VarOp<double>>(std::vector<double>{1})).has_value());
}
