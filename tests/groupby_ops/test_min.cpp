// min: NaN skipped unless every value is NaN, -0.0 below +0.0, strings by bytes.
#include "groupby/ops/min.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpMin, SkipsNanOrdersZerosAndMerges) {
  for (const auto r : op_test::split_results<MinOp<double>>(std::vector<double>{NAN, 0.0, 3, -0.0, NAN})) {
    EXPECT_EQ(*r, 0.0);
    EXPECT_TRUE(std::signbit(*r));
  }
  EXPECT_TRUE(std::isnan(*MinOp<float>::finalise(op_test::fold<MinOp<float>>(std::vector<float>{NAN, NAN}))));
  for (const auto r : op_test::split_results<MinOp<std::int64_t>>(std::vector<std::int64_t>{INT64_MAX, 5, INT64_MIN}))
    EXPECT_EQ(*r, INT64_MIN);
  using S = MinOp<std::string_view>;
  for (const auto r : op_test::split_results<S>(std::vector<std::string_view>{"b", "", "\xc3\xa9", "a"}))
    EXPECT_EQ(*r, "");
  EXPECT_FALSE(S::finalise(S::identity()).has_value());
}
