// The db-benchmark group-by data set, drawn in fixed-size chunks whose random streams depend only
// on (seed, column, chunk), so any thread count gives the same table.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/groupby.hpp"

namespace tandem {
namespace {

constexpr std::size_t kChunk = std::size_t{1} << 16;

std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// One random stream: splitmix64 stepping from a state made of (seed, column, chunk).
struct Stream {
  std::uint64_t state;
  Stream(std::uint64_t seed, std::uint64_t column, std::uint64_t chunk)
      : state(splitmix(splitmix(seed ^ (column * 0x632BE59BD9B4E019ull)) + chunk)) {}
  std::uint64_t next() { return splitmix(state += 0x9E3779B97F4A7C15ull); }
  // Uniform in 1..n (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32).
  std::int32_t one_to(std::uint64_t n) {
    return static_cast<std::int32_t>((static_cast<unsigned __int128>(next()) * n) >> 64) + 1;
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
};

// The rows [first, first + count) of a table.
struct RowRange {
  std::size_t first{0}, count{0};
};

// Fills out[i] = draw(stream) for the range's rows, chunk by chunk of the whole table in parallel
// (a chunk that starts before the range draws and drops its rows before it: every draw takes one
// step of the stream).
template <class T, class Draw>
std::vector<T> draw_column(RowRange range, std::uint64_t seed, std::uint64_t column, Draw draw) {
  std::vector<T> out(range.count);
  if (range.count == 0) return out;
  const std::size_t end = range.first + range.count;
  const std::size_t first_chunk = range.first / kChunk, chunks = (end + kChunk - 1) / kChunk - first_chunk;
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t chunk = first_chunk + c;
    Stream s(seed, column, chunk);
    for (std::size_t i = chunk * kChunk; i < range.first; ++i) (void)draw(s);
    const std::size_t stop = std::min(end, (chunk + 1) * kChunk);
    for (std::size_t i = std::max(range.first, chunk * kChunk); i < stop; ++i) out[i - range.first] = draw(s);
  }
  return out;
}

// 'id' followed by v printed with at least `width` digits.
std::size_t id_length(std::int32_t v, int width) {
  int digits = 1;
  for (std::int32_t x = v; x >= 10; x /= 10) ++digits;
  return 2 + static_cast<std::size_t>(std::max(digits, width));
}

Column id_strings(std::string name, const std::vector<std::int32_t>& v, int width, std::vector<std::uint8_t> validity) {
  std::vector<std::uint64_t> offsets(v.size() + 1, 0);
  for (std::size_t i = 0; i < v.size(); ++i) offsets[i + 1] = offsets[i] + id_length(v[i], width);
  std::vector<char> bytes(offsets.back());
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < v.size(); ++i) {
    char* p = bytes.data() + offsets[i];
    const std::size_t len = offsets[i + 1] - offsets[i];
    p[0] = 'i';
    p[1] = 'd';
    std::fill(p + 2, p + len, '0');
    char digits[16];
    const auto r = std::to_chars(digits, digits + sizeof digits, v[i]);
    const std::size_t n = static_cast<std::size_t>(r.ptr - digits);
    std::copy(digits, digits + n, p + len - n);
  }
  return make_string_column(std::move(name), std::move(bytes), std::move(offsets), std::move(validity));
}

// Which of the values 1..m become missing: floor(m * percent / 100) of them, chosen by a seeded
// shuffle (the generator's rule: a share of each id column's distinct values).
std::vector<bool> missing_values(std::size_t m, double percent, std::uint64_t seed, std::uint64_t column) {
  std::vector<bool> missing(m + 1, false);
  const auto count = static_cast<std::size_t>(static_cast<double>(m) * percent / 100.0);
  if (count == 0) return missing;
  std::vector<std::int32_t> values(m);
  std::iota(values.begin(), values.end(), 1);
  Stream s(seed, column, ~std::uint64_t{0});
  for (std::size_t i = 0; i < count; ++i) {  // partial Fisher-Yates
    const std::size_t j = i + static_cast<std::size_t>(s.one_to(m - i) - 1);
    std::swap(values[i], values[j]);
    missing[static_cast<std::size_t>(values[i])] = true;
  }
  return missing;
}

std::vector<std::uint8_t> id_validity(const std::vector<std::int32_t>& v, const std::vector<bool>& missing) {
  if (std::find(missing.begin(), missing.end(), true) == missing.end()) return {};
  return make_validity(v.size(), [&](std::size_t i) { return !missing[static_cast<std::size_t>(v[i])]; });
}

std::vector<std::uint8_t> value_validity(RowRange range, double percent, std::uint64_t seed, std::uint64_t column) {
  if (percent <= 0) return {};
  const auto absent = draw_column<std::uint8_t>(
      range, seed, column, [&](Stream& s) { return static_cast<std::uint8_t>(s.unit() * 100.0 < percent); });
  return make_validity(range.count, [&](std::size_t i) { return absent[i] == 0; });
}

// Orders rows by id1…id6, a missing value first (as the data set's own generator sorts).
std::vector<std::size_t> key_order(const Table& t) {
  std::vector<std::size_t> order(t.rows());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<const Column*> keys;
  for (const char* n : {"id1", "id2", "id3", "id4", "id5", "id6"}) keys.push_back(&t.column(n));
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    for (const Column* c : keys) {
      const bool pa = c->present(a), pb = c->present(b);
      if (pa != pb) return !pa;
      if (!pa) continue;
      if (c->type == ColumnType::str) {
        const int cmp = c->string(a).compare(c->string(b));
        if (cmp != 0) return cmp < 0;
      } else {
        const auto v = c->numbers<std::int32_t>();
        if (v[a] != v[b]) return v[a] < v[b];
      }
    }
    return a < b;
  });
  return order;
}

}  // namespace

Table generate_groupby_table(const GroupByDataSpec& spec) {
  if (spec.k == 0 || spec.k > 1'000'000'000)
    throw UsageError(fmt::format("groupby data: k = {} (expected 1 to 10^9)", spec.k));
  if (!(spec.nas_percent >= 0 && spec.nas_percent <= 100))
    throw UsageError(fmt::format("groupby data: nas_percent = {} (expected 0 to 100)", spec.nas_percent));
  if (spec.rows > (std::size_t{1} << 31))
    throw UsageError(fmt::format("groupby data: rows = {} (at most 2^31)", spec.rows));
  const std::size_t total = spec.total_rows ? spec.total_rows : spec.rows;
  if (spec.total_rows && (spec.first_row > total || spec.rows > total - spec.first_row || spec.sorted))
    throw UsageError(fmt::format("groupby data: rows {} from row {} of a table of {}{}", spec.rows, spec.first_row,
                                 total, spec.sorted ? ", sorted (a part of a table cannot be sorted alone)" : ""));
  if (total > (std::size_t{1} << 31))
    throw UsageError(fmt::format("groupby data: total_rows = {} (at most 2^31)", total));
  const RowRange range{spec.total_rows ? spec.first_row : 0, spec.rows};
  const std::size_t k = spec.k;
  const std::size_t nk = std::max<std::size_t>(1, total / k);
  const auto seed = spec.seed;
  const double nas = spec.nas_percent;
  auto uniform = [&](std::uint64_t column, std::size_t m) {
    return draw_column<std::int32_t>(range, seed, column, [m](Stream& s) { return s.one_to(m); });
  };
  std::vector<std::vector<std::int32_t>> ids = {uniform(1, k), uniform(2, k), uniform(3, nk),
                                                uniform(4, k), uniform(5, k), uniform(6, nk)};
  const std::size_t ranges[6] = {k, k, nk, k, k, nk};
  std::vector<std::vector<std::uint8_t>> id_valid;
  for (std::size_t c = 0; c < 6; ++c)
    id_valid.push_back(nas > 0 ? id_validity(ids[c], missing_values(ranges[c], nas, seed, 11 + c))
                               : std::vector<std::uint8_t>{});

  Table t;
  t.add(id_strings("id1", ids[0], 3, std::move(id_valid[0])));
  t.add(id_strings("id2", ids[1], 3, std::move(id_valid[1])));
  t.add(id_strings("id3", ids[2], 10, std::move(id_valid[2])));
  t.add(make_column("id4", std::move(ids[3]), std::move(id_valid[3])));
  t.add(make_column("id5", std::move(ids[4]), std::move(id_valid[4])));
  t.add(make_column("id6", std::move(ids[5]), std::move(id_valid[5])));
  t.add(make_column("v1", uniform(7, 5), value_validity(range, nas, seed, 21)));
  t.add(make_column("v2", uniform(8, 15), value_validity(range, nas, seed, 22)));
  auto v3 = draw_column<double>(range, seed, 9, [](Stream& s) { return std::round(s.unit() * 100.0 * 1e6) / 1e6; });
  t.add(make_column("v3", std::move(v3), value_validity(range, nas, seed, 23)));
  if (!spec.sorted) return t;
  const auto order = key_order(t);
  return t.gather(order);
}

}  // namespace tandem
