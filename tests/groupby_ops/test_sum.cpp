// sum: exact integer sums checked against the output type once complete; float sums from -0.0.
#include "groupby/ops/sum.hpp"
#include "op_test.hpp"

using namespace tandem::agg;

TEST(OpSum, IntegersAddUpExactlyAndReportOverflowOfTheTotal) {
  using S = SumOp<std::int64_t>;
  for (const auto r : op_test::split_results<S>(std::vector<std::int64_t>{INT64_MAX, 1, -1})) EXPECT_EQ(*r, INT64_MAX);
  EXPECT_FALSE(S::overflowed(op_test::fold<S>(std::vector<std::int64_t>{INT64_MAX, 1, -1})));
  EXPECT_TRUE(S::overflowed(op_test::fold<S>(std::vector<std::int64_t>{INT64_MAX, 1})));
  EXPECT_TRUE(S::overflowed(op_test::fold<S>(std::vector<std::int64_t>{INT64_MIN, -1})));
  using U = SumOp<std::uint64_t>;
  EXPECT_TRUE(U::overflowed(op_test::fold<U>(std::vector<std::uint64_t>{UINT64_MAX, 1})));
  EXPECT_EQ(*U::finalise(op_test::fold<U>(std::vector<std::uint64_t>{UINT64_MAX - 1, 1})), UINT64_MAX);
  using I = SumOp<std::int32_t>;  // 32-bit inputs add up in int64
  EXPECT_EQ(*I::finalise(op_test::fold<I>(std::vector<std::int32_t>{INT32_MAX, INT32_MAX})), 2ll * INT32_MAX);
  static_assert(std::is_same_v<SumOp<std::uint32_t>::Out, std::uint64_t>);
  static_assert(std::is_same_v<SumOp<float>::Out, double>);
}

TEST(OpSum, FloatsStartFromNegativeZeroAndPropagateNan) {
  using S = SumOp<double>;
  EXPECT_TRUE(std::signbit(*S::finalise(op_test::fold<S>(std::vector<double>{-0.0, -0.0}))));
  EXPECT_TRUE(std::isnan(*S::finalise(op_test::fold<S>(std::vector<double>{1, NAN}))));
  for (const auto r : op_test::split_results<S>(std::vector<double>{0.5, 1.5, -4})) EXPECT_EQ(*r, -2.0);
  EXPECT_FALSE(S::finalise(S::identity()).has_value());  // nothing present: missing
}
