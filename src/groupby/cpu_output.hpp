// Result columns built in parallel from a function of the output row: value_of(i) returns the
// row's value or nothing for a missing one. Threads fill whole blocks of rows, each a multiple of
// eight, so no two threads write one validity byte.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/scratch.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/table.hpp"

namespace tandem::cpu_groupby {

inline constexpr std::size_t kOutputBlock = 4096;

// A buffer owning a scratch array (no zeroing pass before the values are written).
template <class T>
Buffer scratch_buffer(Scratch<T> v) {
  auto owned = std::make_shared<Scratch<T>>(std::move(v));
  return Buffer::borrow(owned->data(), owned->size() * sizeof(T), owned);
}

// Calls row(i) for every i < n in parallel blocks of kOutputBlock rows (from 8 blocks up);
// returns whether any call returned false.
template <class F>
bool any_false_in_blocks(std::size_t n, int threads, F&& row) {
  const auto blocks = static_cast<std::int64_t>((n + kOutputBlock - 1) / kOutputBlock);
  int any = 0;
  FirstException first;  // row() may allocate: no exception may leave the region
#pragma omp parallel for num_threads(blocks < 8 ? 1 : threads) schedule(static) reduction(| : any)
  for (std::int64_t b = 0; b < blocks; ++b) {
    first.run([&] {
      const std::size_t end = std::min(n, static_cast<std::size_t>(b + 1) * kOutputBlock);
      for (std::size_t i = static_cast<std::size_t>(b) * kOutputBlock; i < end; ++i) any |= !row(i);
    });
  }
  first.rethrow();
  return any != 0;
}

template <class T, class F>
Column build_numbers(std::string name, std::size_t n, int threads, F&& value_of) {
  Scratch<T> values(n);
  Scratch<std::uint8_t> bits((n + 7) / 8, 0);
  const bool missing = any_false_in_blocks(n, threads, [&](std::size_t i) {
    const std::optional<T> v = value_of(i);
    if (!v) return false;
    values[i] = *v;
    bits[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
    return true;
  });
  Column c;
  c.name = std::move(name);
  c.type = column_type_v<T>;
  c.length = n;
  c.values = scratch_buffer(std::move(values));
  if (missing) c.validity = scratch_buffer(std::move(bits));
  return c;
}

// memcpy for the short strings keys mostly are, without a library call per string: reads and
// writes only [0, n) of each side.
inline void copy_bytes(char* to, const char* from, std::size_t n) {
  if (n >= 8 && n <= 16) {
    std::uint64_t a, b;
    std::memcpy(&a, from, 8);
    std::memcpy(&b, from + n - 8, 8);
    std::memcpy(to, &a, 8);
    std::memcpy(to + n - 8, &b, 8);
  } else if (n >= 4 && n < 8) {
    std::uint32_t a, b;
    std::memcpy(&a, from, 4);
    std::memcpy(&b, from + n - 4, 4);
    std::memcpy(to, &a, 4);
    std::memcpy(to + n - 4, &b, 4);
  } else if (n < 4) {
    for (std::size_t k = 0; k < n; ++k) to[k] = from[k];
  } else {
    std::memcpy(to, from, n);
  }
}

// a[0..n) replaced by its running sums, in blocks on `threads` threads from 2^16 elements: each
// block's total, the totals' running sums, then each block's sums from its start.
inline void running_sums(std::uint64_t* a, std::size_t n, int threads) {
  const std::size_t T = n < (std::size_t{1} << 16) ? 1 : static_cast<std::size_t>(std::max(threads, 1));
  std::vector<std::uint64_t> start(T + 1, 0);
#pragma omp parallel for num_threads(static_cast <int>(T)) schedule(static)
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = n * t / T; i < n * (t + 1) / T; ++i) start[t + 1] += a[i];
  for (std::size_t t = 0; t < T; ++t) start[t + 1] += start[t];
#pragma omp parallel for num_threads(static_cast <int>(T)) schedule(static)
  for (std::size_t t = 0; t < T; ++t) {
    std::uint64_t sum = start[t];
    for (std::size_t i = n * t / T; i < n * (t + 1) / T; ++i) a[i] = sum += a[i];
  }
}

template <class F>
Column build_strings(std::string name, std::size_t n, int threads, F&& value_of) {
  Scratch<std::uint64_t> offsets(n + 1);
  offsets[0] = 0;
  Scratch<std::uint8_t> bits((n + 7) / 8, 0);
  const bool missing = any_false_in_blocks(n, threads, [&](std::size_t i) {
    const std::optional<std::string_view> v = value_of(i);
    offsets[i + 1] = v ? v->size() : 0;
    if (!v) return false;
    bits[i >> 3] |= static_cast<std::uint8_t>(1u << (i & 7));
    return true;
  });
  running_sums(offsets.data(), n + 1, threads);
  Scratch<char> bytes(offsets[n]);
  any_false_in_blocks(n, threads, [&](std::size_t i) {
    const std::optional<std::string_view> v = value_of(i);
    if (v) copy_bytes(bytes.data() + offsets[i], v->data(), v->size());
    return true;
  });
  Column c;
  c.name = std::move(name);
  c.type = ColumnType::str;
  c.length = n;
  c.values = scratch_buffer(std::move(bytes));
  c.offsets = scratch_buffer(std::move(offsets));
  if (missing) c.validity = scratch_buffer(std::move(bits));
  return c;
}

// A column of Out (a number type or std::string_view).
template <class Out, class F>
Column build_column(std::string name, std::size_t n, int threads, F&& value_of) {
  if constexpr (std::is_same_v<Out, std::string_view>) return build_strings(std::move(name), n, threads, value_of);
  else return build_numbers<Out>(std::move(name), n, threads, value_of);
}

}  // namespace tandem::cpu_groupby
