// tandem::sort dispatcher. Paths: bitonic (seed 000, incl. hybrid) and the CPU comparison sort.
#include "tandem/sort.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tandem/bitonic.hpp"
#include "tandem/error.hpp"
#include "tandem/key_order.hpp"
#include "tandem/timing.hpp"

namespace tandem {
namespace {

constexpr std::array<std::pair<std::string_view, SortAlgorithm>, 4> kAlgorithms{{
    {"auto", SortAlgorithm::auto_}, {"bitonic", SortAlgorithm::bitonic},
    {"radix", SortAlgorithm::radix}, {"merge", SortAlgorithm::merge}}};

template <class K>
auto comparator(bool descending) {
  return [descending](const K& a, const K& b) { return descending ? key_less(b, a) : key_less(a, b); };
}

template <class K, class V>
void cpu_stable_sort_pairs(std::span<K> keys, std::span<V> values, bool descending) {
  std::vector<std::size_t> idx(keys.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  auto less = comparator<K>(descending);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return less(keys[a], keys[b]); });
  std::vector<K> k2(keys.size());
  std::vector<V> v2(values.size());
  for (std::size_t i = 0; i < idx.size(); ++i) {
    k2[i] = keys[idx[i]];
    v2[i] = values[idx[i]];
  }
  std::copy(k2.begin(), k2.end(), keys.begin());
  std::copy(v2.begin(), v2.end(), values.begin());
}

}  // namespace

SortAlgorithm parse_sort_algorithm(std::string_view name) {
  for (auto [n, a] : kAlgorithms)
    if (n == name) return a;
  throw UsageError(fmt::format("unknown sort algorithm '{}' (expected auto, bitonic, radix or merge)", name));
}

std::string_view to_string(SortAlgorithm a) {
  for (auto [n, v] : kAlgorithms)
    if (v == a) return n;
  return "?";
}

template <class K>
Report sort(std::span<K> keys, const SortOptions& opts) {
  if (opts.algorithm == SortAlgorithm::bitonic || opts.device == Device::hybrid) return bitonic::sort(keys, opts);
  Report r;
  r.operation = "sort";
  Stopwatch w;
  std::sort(keys.begin(), keys.end(), comparator<K>(opts.descending));
  r.add("CPU comparison sort", "cpu", w.seconds(), fmt::format("{} keys", keys.size()));
  return r;
}

template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts) {
  if (keys.size() != values.size())
    throw UsageError(fmt::format("sort_pairs: {} keys but {} values", keys.size(), values.size()));
  if (opts.algorithm == SortAlgorithm::bitonic || opts.device == Device::hybrid)
    return bitonic::sort_pairs(keys, values, opts);
  Report r;
  r.operation = "sort";
  Stopwatch w;
  cpu_stable_sort_pairs(keys, values, opts.descending);
  r.add("CPU stable comparison sort", "cpu", w.seconds(), fmt::format("{} pairs", keys.size()));
  return r;
}

#define TANDEM_SORT_KEYS(K) template Report sort<K>(std::span<K>, const SortOptions&);
#define TANDEM_SORT_PAIRS(K, V) template Report sort_pairs<K, V>(std::span<K>, std::span<V>, const SortOptions&);
#define TANDEM_SORT_ALL(K) TANDEM_SORT_KEYS(K) TANDEM_SORT_PAIRS(K, std::uint32_t) TANDEM_SORT_PAIRS(K, std::uint64_t)
TANDEM_SORT_ALL(std::uint32_t)
TANDEM_SORT_ALL(std::int32_t)
TANDEM_SORT_ALL(std::uint64_t)
TANDEM_SORT_ALL(std::int64_t)
TANDEM_SORT_ALL(float)
TANDEM_SORT_ALL(double)

}  // namespace tandem
