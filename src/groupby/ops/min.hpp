// min(col): the smallest present value (see extreme.hpp for the order of floats and strings).
#pragma once
#include "groupby/ops/extreme.hpp"

namespace tandem::agg {

template <class T>
struct MinOp : Extreme<T, true> {};

}  // namespace tandem::agg
