// max: NaN skipped unless every value is NaN, +0.0 above -0.0, strings by bytes.
#include "groupby/ops/max.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpMax, SkipsNanOrdersZerosAndMerges) {
  for (const auto r : op_test::split_results<MaxOp<double>>(std::vector<double>{-0.0, NAN, 0.0, -3})) {
    EXPECT_EQ(*r, 0.0);
    EXPECT_FALSE(std::signbit(*r));
  }
  for (const auto r : op_test::split_results<MaxOp<std::uint32_t>>(std::vector<std::uint32_t>{0, UINT32_MAX, 7}))
    EXPECT_EQ(*r, UINT32_MAX);
  using S = MaxOp<std::string_view>;
  for (const auto r : op_test::split_results<S>(std::vector<std::string_view>{"a", "\xc3\xa9", "z"}))
    EXPECT_EQ(*r, "\xc3\xa9");
}
