// last(col): the last present value in row order.
#pragma once
#include "groupby/ops/op_common.hpp"

namespace tandem::agg {

template <class T>
struct LastOp {
  static constexpr bool valid = true;
  static constexpr bool holistic = false;
  using Out = T;
  struct State {
    T v;
    bool seen;
  };
  static constexpr State identity() { return {T{}, false}; }
  TANDEM_HD static void update(State& s, T v) { s = {v, true}; }
  // a holds earlier rows than b.
  TANDEM_HD static void merge(State& a, const State& b) {
    if (b.seen) a = b;
  }
  static std::optional<Out> finalise(const State& s) {
    if (!s.seen) return std::nullopt;
    return s.v;
  }
};

}  // namespace tandem::agg
