// first(col): the first present value in row order.
#pragma once
#include "groupby/ops/op_common.hpp"

namespace tandem::agg {

template <class T>
struct FirstOp : KeptValue<T> {
  using State = typename KeptValue<T>::State;
  TANDEM_HD static void update(State& s, T v) {
    if (!s.seen) s = {v, true};
  }
  // a holds earlier rows than b.
  TANDEM_HD static void merge(State& a, const State& b) {
    if (!a.seen) a = b;
  }
};

}  // namespace tandem::agg
