// sum(col): integers add up exactly and fail instead of wrapping: 32-bit inputs in a 64-bit
// state (which 2^32 rows cannot overflow), 64-bit inputs in a 128-bit state, checked against the
// output type (int64 for signed, uint64 for unsigned inputs) once the group is complete, so the
// answer does not depend on the order rows are added in. Floats add up in double (NaN
// propagates); the identity is -0.0, so a group of -0.0 values sums to -0.0.
#pragma once
#include "groupby/ops/op_common.hpp"

namespace tandem::agg {

template <class T>
struct SumOp {
  static constexpr bool valid = is_number_v<T>;
  static constexpr bool holistic = false;
  using Out = sum_t<T>;
  using Acc = std::conditional_t<std::is_integral_v<T> && sizeof(T) == 8,
                                 std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>, Out>;
  struct State {
    Acc sum;
    bool seen;
  };
  static constexpr State identity() {
    if constexpr (std::is_floating_point_v<Out>) return {-0.0, false};
    else return {0, false};
  }
  TANDEM_HD static void update(State& s, T v) {
    s.sum += static_cast<Acc>(v);
    s.seen = true;
  }
  TANDEM_HD static void merge(State& a, const State& b) {
    a.sum += b.sum;
    a.seen = a.seen || b.seen;
  }
  // Whether the group's sum lies outside Out.
  static bool overflowed(const State& s) {
    if constexpr (std::is_same_v<Acc, Out>) return false;
    else
      return s.sum > static_cast<Acc>(std::numeric_limits<Out>::max()) ||
             s.sum < static_cast<Acc>(std::numeric_limits<Out>::lowest());
  }
  static std::optional<Out> finalise(const State& s) {
    if (!s.seen) return std::nullopt;
    return static_cast<Out>(s.sum);
  }
};

}  // namespace tandem::agg
