// What the holistic operators (median, quantile, nunique, top) share: they see one group's
// present values at once, as a span they may reorder, and write outputs(a) results.
#pragma once
#include <algorithm>
#include <span>

#include "groupby/ops/op_common.hpp"
#include "tandem/groupby.hpp"

namespace tandem::agg {

// Where quantile q of n ordered values lies: linear interpolation between the order statistics
// at lo = floor(q·(n − 1)) and lo + 1, weighted by frac (pandas' default, SQL's quantile_cont).
// The CPU and GPU engines both place it here.
struct QuantilePosition {
  std::size_t lo;
  double frac;
};
TANDEM_HD QuantilePosition quantile_position(std::size_t n, double q) {
  const double pos = q * static_cast<double>(n - 1);
  const std::size_t lo = static_cast<std::size_t>(pos) < n - 1 ? static_cast<std::size_t>(pos) : n - 1;
  return {lo, pos - static_cast<double>(lo)};
}
TANDEM_HD double interpolate(double a, double b, double frac) { return frac == 0 ? a : a + (b - a) * frac; }

// Exact quantile q in [0, 1] of the values in value_less order. Reorders the values; nothing for
// no values.
template <class T>
std::optional<double> quantile_of(std::span<T> v, double q) {
  if (v.empty()) return std::nullopt;
  const auto less = [](T a, T b) { return value_less(a, b); };
  const auto [lo, frac] = quantile_position(v.size(), q);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end(), less);
  const double a = static_cast<double>(normalised(v[lo]));
  if (frac == 0 || lo + 1 >= v.size()) return a;
  const double b = static_cast<double>(
      normalised(*std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end(), less)));
  return interpolate(a, b, frac);
}

}  // namespace tandem::agg
