// mean(col): the sum in double over the count of present values.
#pragma once
#include "groupby/ops/op_common.hpp"

namespace tandem::agg {

template <class T>
struct MeanOp {
  static constexpr bool valid = is_number_v<T>;
  static constexpr bool holistic = false;
  using Out = double;
  using State = double;  // the sum; the engine counts the values
  static constexpr State identity() { return -0.0; }
  TANDEM_HD static void update(State& s, T v) { s += static_cast<double>(v); }
  TANDEM_HD static void merge(State& a, const State& b) { a += b; }
  static std::optional<Out> finalise(const State& s, std::int64_t present) {
    if (present == 0) return std::nullopt;
    return s / static_cast<double>(present);
  }
};

}  // namespace tandem::agg
