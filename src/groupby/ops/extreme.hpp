// The order min and max pick by, shared with the GPU group-by (tandem::mr::agg_less): floats
// with -0.0 below +0.0 and NaN skipped unless every value is NaN; integers by value; strings by
// bytes. `Extreme<T, Smaller>` is min (Smaller) or max.
#pragma once
#include "groupby/ops/op_common.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::agg {

template <class T, bool Smaller>
struct Extreme {
  static constexpr bool valid = true;
  static constexpr bool holistic = false;
  using Out = T;
  struct State {
    T v;
    bool seen;
  };
  static constexpr State identity() {
    if constexpr (std::is_floating_point_v<T>) return {std::numeric_limits<T>::quiet_NaN(), false};
    else if constexpr (std::is_same_v<T, std::string_view>) return {std::string_view{}, false};
    else return {Smaller ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest(), false};
  }
  TANDEM_HD static bool better(T a, T b) {  // a replaces b
    if constexpr (std::is_floating_point_v<T>) return Smaller ? mr::agg_less(a, b) : mr::agg_greater(a, b);
    else return Smaller ? a < b : b < a;
  }
  TANDEM_HD static void update(State& s, T v) {
    if constexpr (std::is_same_v<T, std::string_view>) {
      if (!s.seen || better(v, s.v)) s.v = v;
    } else {
      s.v = better(v, s.v) ? v : s.v;
    }
    s.seen = true;
  }
  TANDEM_HD static void merge(State& a, const State& b) {
    if (b.seen) update(a, b.v);
  }
  static std::optional<Out> finalise(const State& s) {
    if (!s.seen) return std::nullopt;
    return s.v;
  }
};

}  // namespace tandem::agg
