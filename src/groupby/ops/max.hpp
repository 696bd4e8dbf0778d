// max(col): the largest present value (see extreme.hpp for the order of floats and strings).
#pragma once
#include "groupby/ops/extreme.hpp"

namespace tandem::agg {

template <class T>
struct MaxOp : Extreme<T, false> {};

}  // namespace tandem::agg
