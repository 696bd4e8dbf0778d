// Helpers for the operator tests: fold values into a state, and check that folding two halves
// and merging them gives what folding everything gives.
#pragma once
#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "tandem/groupby.hpp"

namespace op_test {

template <class Op, class T>
typename Op::State fold(const std::vector<T>& values) {
  auto s = Op::identity();
  for (const T& v : values) Op::update(s, v);
  return s;
}

// finalise(fold(all)) and finalise(merge(fold(first k), fold(rest))) for every split k.
template <class Op, class T>
std::vector<std::optional<typename Op::Out>> split_results(const std::vector<T>& values) {
  std::vector<std::optional<typename Op::Out>> out;
  for (std::size_t k = 0; k <= values.size(); ++k) {
    auto a = fold<Op>(std::vector<T>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k)));
    Op::merge(a, fold<Op>(std::vector<T>(values.begin() + static_cast<std::ptrdiff_t>(k), values.end())));
    out.push_back(Op::finalise(a));
  }
  return out;
}

// The results of a holistic operator on the values.
template <class Op, class T>
std::vector<std::optional<typename Op::Out>> compute(std::vector<T> values, const tandem::Aggregation& a = {}) {
  std::vector<std::optional<typename Op::Out>> out(Op::outputs(a));
  Op::compute(std::span<T>(values), a, out.data());
  return out;
}

inline tandem::Aggregation with_n(std::size_t n) {
  tandem::Aggregation a;
  a.n = n;
  return a;
}
inline tandem::Aggregation with_q(double q) {
  tandem::Aggregation a;
  a.q = q;
  return a;
}

}  // namespace op_test
