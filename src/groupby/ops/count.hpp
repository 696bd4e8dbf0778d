// count(col): present values of the column in the group (0 when none is present).
#pragma once
#include "groupby/ops/op_common.hpp"

namespace tandem::agg {

template <class T>
struct CountOp {
  static constexpr bool valid = true;
  static constexpr bool holistic = false;
  using Out = std::int64_t;
  using State = std::int64_t;
  static constexpr State identity() { return 0; }
  TANDEM_HD static void update(State& s, const T&) { ++s; }
  TANDEM_HD static void merge(State& a, const State& b) { a += b; }
  static std::optional<Out> finalise(const State& s) { return s; }
};

}  // namespace tandem::agg
