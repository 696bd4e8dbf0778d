// count(col) and count(): how many values the group's states saw.
#include "groupby/ops/count.hpp"
#include "groupby/ops/count_rows.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpCount, CountsValuesAndMergesByAdding) {
  EXPECT_EQ(*CountOp<double>::finalise(CountOp<double>::identity()), 0);
  for (const auto r : op_test::split_results<CountOp<double>>(std::vector<double>{1, NAN, -0.0})) EXPECT_EQ(*r, 3);
  for (const auto r : op_test::split_results<CountRowsOp<int>>(std::vector<int>{1, 2, 3, 4, 5})) EXPECT_EQ(*r, 5);
}
