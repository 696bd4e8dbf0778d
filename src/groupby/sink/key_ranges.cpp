#include "groupby/sink/key_ranges.hpp"

#include <algorithm>
#include <numeric>

#include "groupby/ops/op_common.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/key_order.hpp"

namespace tandem::sink {
namespace {

int compare_column(const Column& a, std::size_t i, const Column& b, std::size_t j) {
  const bool pa = a.present(i), pb = b.present(j);
  if (!pa || !pb) return pa == pb ? 0 : pa ? -1 : 1;  // a missing key comes last
  if (a.type == ColumnType::str) {
    const int c = a.string(i).compare(b.string(j));  // by unsigned bytes
    return (c > 0) - (c < 0);
  }
  return visit_numeric(a.type, [&](auto zero) {
    using T = decltype(zero);
    const auto x = to_ordered(agg::normalised(a.values.as<T>()[i]));
    const auto y = to_ordered(agg::normalised(b.values.as<T>()[j]));
    return (x > y) - (x < y);
  });
}

}  // namespace

int compare_keys(const Table& a, std::size_t i, const Table& b, std::size_t j, std::size_t keys) {
  for (std::size_t k = 0; k < keys; ++k)
    if (const int c = compare_column(a.columns()[k], i, b.columns()[k], j); c != 0) return c;
  return 0;
}

Table gather_keys(const Table& t, std::size_t keys, const std::vector<std::size_t>& rows) {
  std::vector<Column> cols;
  for (std::size_t k = 0; k < keys; ++k) cols.push_back(gather(t.columns()[k], rows));
  return Table(std::move(cols));
}

KeyRanges KeyRanges::sample(const std::vector<const Table*>& tables, std::size_t keys, std::size_t parts,
                            std::size_t sample_rows) {
  KeyRanges r;
  r.keys_ = keys;
  std::size_t total = 0;
  for (const Table* t : tables) total += t->rows();
  if (keys == 0 || total == 0 || parts < 2 || sample_rows == 0) return r;
  // Rows k·total/n of the tables' rows taken one after another, k = 0 … n-1.
  const std::size_t n = std::min(total, sample_rows);
  std::vector<Table> picked;
  std::size_t before = 0, k = 0;
  for (const Table* t : tables) {
    std::vector<std::size_t> rows;
    for (; k < n && (k * total) / n < before + t->rows(); ++k) rows.push_back((k * total) / n - before);
    before += t->rows();
    if (!rows.empty()) picked.push_back(gather_keys(*t, keys, rows));
  }
  const Table sample = concat_tables(picked, empty_like(picked.front()), 1);
  std::vector<std::size_t> order(sample.rows());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return compare_keys(sample, a, sample, b, keys) < 0; });
  // A single key cannot be split: one range.
  if (compare_keys(sample, order.front(), sample, order.back(), keys) == 0) return r;
  // The sample's quantiles 1/parts … (parts-1)/parts, as positions in sorted order. A key that two
  // quantiles hit holds more than a range's share: the sampled key just below it is a splitter
  // too, so that its range holds little besides it.
  std::vector<std::size_t> at;
  for (std::size_t q = 1; q < parts; ++q) at.push_back(q * order.size() / parts);
  const auto same = [&](std::size_t x, std::size_t y) {
    return compare_keys(sample, order[x], sample, order[y], keys) == 0;
  };
  const std::size_t quantiles = at.size();
  for (std::size_t q = 1; q < quantiles; ++q) {
    if (!same(at[q - 1], at[q])) continue;
    std::size_t first = at[q - 1];
    while (first > 0 && same(first - 1, first)) --first;
    if (first > 0) at.push_back(first - 1);
  }
  std::sort(at.begin(), at.end());
  std::vector<std::size_t> chosen;  // rows of the sample, ascending, distinct keys
  for (std::size_t i = 0; i < at.size(); ++i)
    if (i == 0 || !same(at[i - 1], at[i])) chosen.push_back(order[at[i]]);
  r.splitters_ = gather_keys(sample, keys, chosen);
  return r;
}

std::vector<std::uint32_t> KeyRanges::assign(const Table& t) const {
  std::vector<std::uint32_t> out(t.rows(), 0);
  const std::size_t s = splitters_.rows();
  if (s == 0) return out;
  for (std::size_t i = 0; i < out.size(); ++i) {
    // The first splitter at or above the key.
    std::size_t lo = 0, hi = s;
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (compare_keys(splitters_, mid, t, i, keys_) < 0) lo = mid + 1;
      else hi = mid;
    }
    out[i] = static_cast<std::uint32_t>(lo);
  }
  return out;
}

}  // namespace tandem::sink
