// Result columns built in parallel from a function of the output row: value_of(i) returns the
// row's value or nothing for a missing one. Threads fill whole blocks of rows, each a multiple of
// eight, so no two threads write one validity byte.
#pragma once
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/table.hpp"

namespace tandem::cpu_groupby {

inline constexpr std::size_t kOutputBlock = 4096;

template <class T, class F>
Column build_numbers(std::string name, std::size_t n, int threads, F&& value_of) {
  if (n < 8 * kOutputBlock) threads = 1;
  std::vector<T> values(n);
  std::vector<std::uint8_t> bits((n + 7) / 8, 0);
  const auto blocks = static_cast<std::int64_t>((n + kOutputBlock - 1) / kOutputBlock);
  int missing = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : missing)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t end = std::min(n, static_cast<std::size_t>(b + 1) * kOutputBlock);
    for (std::size_t i = static_cast<std::size_t>(b) * kOutputBlock; i < end; ++i) {
      const std::optional<T> v = value_of(i);
      if (v) {
        values[i] = *v;
        bits[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
      } else {
        missing = 1;
      }
    }
  }
  if (!missing) bits.clear();
  return make_column(std::move(name), std::move(values), std::move(bits));
}

template <class F>
Column build_strings(std::string name, std::size_t n, int threads, F&& value_of) {
  if (n < 8 * kOutputBlock) threads = 1;
  std::vector<std::uint64_t> offsets(n + 1, 0);
  std::vector<std::uint8_t> bits((n + 7) / 8, 0);
  const auto blocks = static_cast<std::int64_t>((n + kOutputBlock - 1) / kOutputBlock);
  int missing = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : missing)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t end = std::min(n, static_cast<std::size_t>(b + 1) * kOutputBlock);
    for (std::size_t i = static_cast<std::size_t>(b) * kOutputBlock; i < end; ++i) {
      const std::optional<std::string_view> v = value_of(i);
      offsets[i + 1] = v ? v->size() : 0;
      if (v) bits[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
      else missing = 1;
    }
  }
  for (std::size_t i = 0; i < n; ++i) offsets[i + 1] += offsets[i];
  std::vector<char> bytes(offsets[n]);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t end = std::min(n, static_cast<std::size_t>(b + 1) * kOutputBlock);
    for (std::size_t i = static_cast<std::size_t>(b) * kOutputBlock; i < end; ++i) {
      const std::optional<std::string_view> v = value_of(i);
      if (v && !v->empty()) std::memcpy(bytes.data() + offsets[i], v->data(), v->size());
    }
  }
  if (!missing) bits.clear();
  return make_string_column(std::move(name), std::move(bytes), std::move(offsets), std::move(bits));
}

// A column of Out (a number type or std::string_view).
template <class Out, class F>
Column build_column(std::string name, std::size_t n, int threads, F&& value_of) {
  if constexpr (std::is_same_v<Out, std::string_view>) return build_strings(std::move(name), n, threads, value_of);
  else return build_numbers<Out>(std::move(name), n, threads, value_of);
}

}  // namespace tandem::cpu_groupby
