// mean(col): the sum in double over the count of present values.
#pragma once
#include "groupby/ops/op_common.hpp"

namespace tandem::agg {

template <class T>
struct MeanOp {
  static constexpr bool valid = is_number_v<T>;
  static constexpr bool holistic = false;
  using Out = double;
  struct State {
    double sum;
    std::int64_t count;
  };
  static constexpr State identity() { return {-0.0, 0}; }
  TANDEM_HD static void update(State& s, T v) {
    s.sum += static_cast<double>(v);
    ++s.count;
  }
  TANDEM_HD static void merge(State& a, const State& b) {
    a.sum += b.sum;
    a.count += b.count;
  }
  static std::optional<Out> finalise(const State& s) {
    if (s.count == 0) return std::nullopt;
    return s.sum / static_cast<double>(s.count);
  }
};

}  // namespace tandem::agg
