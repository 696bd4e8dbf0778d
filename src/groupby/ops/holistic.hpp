// What the holistic operators (median, quantile, nunique, top) share: they see one group's
// present values at once, as a span they may reorder, and write outputs(a) results.
#pragma once
#include <algorithm>
#include <span>

#include "groupby/ops/op_common.hpp"
#include "tandem/groupby.hpp"

namespace tandem::agg {

// Exact quantile q in [0, 1] of the values in value_less order: linear interpolation between
// the order statistics at floor and ceil of q·(n − 1), as pandas' default and SQL's
// quantile_cont. Reorders the values; nothing for no values.
template <class T>
std::optional<double> quantile_of(std::span<T> v, double q) {
  if (v.empty()) return std::nullopt;
  const auto less = [](T a, T b) { return value_less(a, b); };
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = std::min(static_cast<std::size_t>(pos), v.size() - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end(), less);
  const double a = static_cast<double>(normalised(v[lo]));
  const double frac = pos - static_cast<double>(lo);
  if (frac == 0 || lo + 1 >= v.size()) return a;
  const double b = static_cast<double>(
      normalised(*std::min_element(v.begin() + static_cast<std::ptrdiff_t>(lo) + 1, v.end(), less)));
  return a + (b - a) * frac;
}

}  // namespace tandem::agg
