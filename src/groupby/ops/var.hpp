// var(col): the sample variance (n - 1), by Welford's update and Chan's merge, which stay
// accurate where the sum of squares minus the squared sum cancels. Fewer than two present
// values: missing.
#pragma once
#include "groupby/ops/op_common.hpp"

namespace tandem::agg {

struct Moments {
  std::int64_t n;
  double mean;
  double m2;  // sum of squared deviations from the mean

  TANDEM_HD void add(double x) {
    ++n;
    const double d = x - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (x - mean);
  }
  TANDEM_HD void merge(const Moments& b) {
    if (b.n == 0) return;
    if (n == 0) {
      *this = b;
      return;
    }
    const double na = static_cast<double>(n), nb = static_cast<double>(b.n), nt = na + nb;
    const double d = b.mean - mean;
    mean += d * nb / nt;
    m2 += b.m2 + d * d * na * nb / nt;
    n += b.n;
  }
  std::optional<double> variance() const {
    if (n < 2) return std::nullopt;
    return m2 / static_cast<double>(n - 1);
  }
};

template <class T>
struct VarOp {
  static constexpr bool valid = is_number_v<T>;
  static constexpr bool holistic = false;
  using Out = double;
  using State = Moments;
  static constexpr State identity() { return {0, 0.0, 0.0}; }
  TANDEM_HD static void update(State& s, T v) { s.add(static_cast<double>(v)); }
  TANDEM_HD static void merge(State& a, const State& b) { a.merge(b); }
  static std::optional<Out> finalise(const State& s) { return s.variance(); }
};

}  // namespace tandem::agg
