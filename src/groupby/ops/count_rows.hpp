// count(): rows in the group, missing values included. It reads no column (T is ignored), so
// it counts as count(col) does for a column without missing values.
#pragma once
#include "groupby/ops/count.hpp"

namespace tandem::agg {

template <class T>
struct CountRowsOp : CountOp<T> {};

}  // namespace tandem::agg
