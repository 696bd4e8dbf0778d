// The order min and max pick by, shared with the GPU group-by (tandem::agg_less): floats
// with -0.0 below +0.0 and NaN skipped unless every value is NaN; integers by value; strings by
// bytes. `Extreme<T, Smaller>` is min (Smaller) or max.
#pragma once
#include "groupby/ops/op_common.hpp"
#include "tandem/core/agg_order.hpp"

namespace tandem::agg {

// A string state remembers whether it holds a value: no string lies above every other.
struct StringExtreme {
  std::string_view v;
  bool seen;
};

template <class T, bool Smaller>
struct Extreme {
  static constexpr bool valid = true;
  static constexpr bool holistic = false;
  static constexpr bool strings = std::is_same_v<T, std::string_view>;
  using Out = T;
  using State = std::conditional_t<strings, StringExtreme, T>;
  static constexpr State identity() {
    if constexpr (strings) return {std::string_view{}, false};
    else if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::quiet_NaN();
    else return Smaller ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  }
  TANDEM_HD static bool better(T a, T b) {  // a replaces b
    if constexpr (std::is_floating_point_v<T>) return Smaller ? agg_less(a, b) : agg_greater(a, b);
    else return Smaller ? a < b : b < a;
  }
  TANDEM_HD static void update(State& s, T v) {
    if constexpr (strings) {
      if (!s.seen || better(v, s.v)) s = {v, true};
    } else {
      s = better(v, s) ? v : s;
    }
  }
  TANDEM_HD static void merge(State& a, const State& b) {
    if constexpr (strings) {
      if (b.seen) update(a, b.v);
    } else {
      update(a, b);
    }
  }
  static std::optional<Out> finalise(const State& s, std::int64_t present) {
    if (present == 0) return std::nullopt;
    if constexpr (strings) return s.v;
    else return s;
  }
};

}  // namespace tandem::agg
