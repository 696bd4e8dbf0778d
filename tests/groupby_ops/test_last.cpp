// last: the last value in row order, also when the later rows' state saw nothing.
#include "groupby/ops/last.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpLast, KeepsTheLatestValue) {
  for (const auto r : op_test::split_results<LastOp<std::int64_t>>(std::vector<std::int64_t>{4, 5, -6}))
    EXPECT_EQ(*r, -6);
  for (const auto r : op_test::split_results<LastOp<std::string_view>>(std::vector<std::string_view>{"x", "", "y", ""}))
    EXPECT_EQ(*r, "");
}
