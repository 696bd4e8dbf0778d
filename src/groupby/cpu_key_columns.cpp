// Encoding one key column (see cpu_keys.hpp): numbers by offset from the minimum or by rank,
// strings by rank. Floats are keyed by value: -0.0 as 0.0, every NaN as one NaN after all numbers.
#include <cstring>
#include <numeric>

#include <fmt/format.h>

#include "groupby/cpu_aggregator.hpp"
#include "groupby/cpu_dictionary.hpp"
#include "groupby/cpu_keys.hpp"
#include "groupby/ops/op_common.hpp"
#include "sort/cpu_radix.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::cpu_groupby {
namespace {

struct Hash64 {
  std::uint64_t operator()(std::uint64_t k) const { return mr::mix64(k); }
};

// A string of at most 15 bytes packed into 16: bytes 0-7 big-endian in hi, bytes 8-14 in the
// top of lo, length + 1 in lo's lowest byte. (hi, lo) order is the strings' byte order, equal
// packings are equal strings, and no packing is all zero.
struct ShortKey {
  std::uint64_t hi, lo;
  bool operator==(const ShortKey&) const = default;
};
struct ShortKeyLess {
  bool operator()(const ShortKey& a, const ShortKey& b) const { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; }
};
struct ShortKeyHash {
  std::uint64_t operator()(const ShortKey& k) const { return mr::mix64(k.hi * 0x9E3779B97F4A7C15ull ^ k.lo); }
};
constexpr std::size_t kShortMax = 15;

ShortKey load_short(const char* bytes, std::size_t size, std::uint64_t begin, std::uint64_t end) {
  const std::size_t len = end - begin;
  std::uint64_t w[2] = {0, 0};
  if (begin + 16 <= size) {
    std::memcpy(w, bytes + begin, 16);
  } else if (len > 0) {
    char buf[16] = {};
    std::memcpy(buf, bytes + begin, len);
    std::memcpy(w, buf, 16);
  }
  const std::uint64_t hi = __builtin_bswap64(w[0]), lo = __builtin_bswap64(w[1]);
  const std::uint64_t m0 = len >= 8 ? ~0ull : len == 0 ? 0 : ~0ull << (64 - 8 * len);
  const std::uint64_t m1 = len <= 8 ? 0 : ~0ull << (64 - 8 * (len - 8));
  return {hi & m0, (lo & m1) | (len + 1)};
}

template <class F>
decltype(auto) with_presence(const Column& c, F&& f) {
  if (c.validity.empty()) return f(AllPresent{});
  return f(BitPresent{reinterpret_cast<const std::uint8_t*>(c.validity.data())});
}

// Integers (and floats whose ordered bits happen to lie close): code = ordered value - min.
template <class T>
class RangeKeys final : public KeyColumn {
 public:
  RangeKeys(std::string name, std::uint64_t min, std::uint64_t range, bool missing)
      : name_(std::move(name)), min_(min), range_(range) {
    card = range + (missing ? 1 : 0);
  }
  Column decode(std::span<const std::uint32_t> c, int threads) const override {
    return build_numbers<T>(name_, c.size(), threads, [&](std::size_t i) -> std::optional<T> {
      if (c[i] >= range_) return std::nullopt;
      return from_ordered<T>(static_cast<ordered_bits_t<T>>(min_ + c[i]));
    });
  }
  std::string how() const override { return fmt::format("{} codes by offset from the minimum", card); }

 private:
  std::string name_;
  std::uint64_t min_, range_;
};

// Numbers of a wide range: code = rank among the distinct values.
template <class T>
class RankedNumbers final : public KeyColumn {
 public:
  RankedNumbers(std::string name, std::vector<std::uint64_t> sorted, bool missing, std::string how)
      : name_(std::move(name)), sorted_(std::move(sorted)), how_(std::move(how)) {
    card = sorted_.size() + (missing ? 1 : 0);
  }
  Column decode(std::span<const std::uint32_t> c, int threads) const override {
    return build_numbers<T>(name_, c.size(), threads, [&](std::size_t i) -> std::optional<T> {
      if (c[i] >= sorted_.size()) return std::nullopt;
      return from_ordered<T>(static_cast<ordered_bits_t<T>>(sorted_[c[i]]));
    });
  }
  std::string how() const override { return fmt::format("{} distinct values, {}", sorted_.size(), how_); }

 private:
  std::string name_;
  std::vector<std::uint64_t> sorted_;
  std::string how_;
};

class RankedStrings final : public KeyColumn {
 public:
  RankedStrings(std::string name, std::vector<std::string_view> sorted, bool missing, std::string how)
      : name_(std::move(name)), sorted_(std::move(sorted)), how_(std::move(how)) {
    card = sorted_.size() + (missing ? 1 : 0);
  }
  Column decode(std::span<const std::uint32_t> c, int threads) const override {
    return build_strings(name_, c.size(), threads, [&](std::size_t i) -> std::optional<std::string_view> {
      if (c[i] >= sorted_.size()) return std::nullopt;
      return sorted_[c[i]];
    });
  }
  std::string how() const override { return fmt::format("{} distinct strings, {}", sorted_.size(), how_); }

 private:
  std::string name_;
  std::vector<std::string_view> sorted_;
  std::string how_;
};

std::uint64_t range_limit(std::size_t n) {
  return std::min<std::uint64_t>(std::max<std::uint64_t>(std::uint64_t{1} << 16, 2 * std::uint64_t{n}),
                                 (std::uint64_t{1} << 31));
}

template <class T, class Present>
std::unique_ptr<KeyColumn> encode_numbers(const Column& c, int threads, Present present) {
  const std::size_t n = c.length;
  const T* v = reinterpret_cast<const T*>(c.values.data());
  const auto key = [v](std::size_t i) -> std::uint64_t { return to_ordered(agg::normalised(v[i])); };
  std::uint64_t lo = UINT64_MAX, hi = 0;
  std::size_t seen = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : lo) reduction(max : hi) reduction(+ : seen)
  for (std::size_t i = 0; i < n; ++i)
    if (present(i)) {
      const std::uint64_t k = key(i);
      lo = std::min(lo, k);
      hi = std::max(hi, k);
      ++seen;
    }
  const bool missing = seen < n;
  std::vector<std::uint32_t> codes(n);
  if (seen == 0 || hi - lo < range_limit(n)) {
    const std::uint64_t range = seen == 0 ? 0 : hi - lo + 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::size_t i = 0; i < n; ++i) codes[i] = present(i) ? static_cast<std::uint32_t>(key(i) - lo) : static_cast<std::uint32_t>(range);
    auto k = std::make_unique<RangeKeys<T>>(c.name, lo, range, missing);
    k->codes = std::move(codes);
    return k;
  }
  std::vector<std::uint64_t> keys(seen);
  std::vector<std::uint32_t> rows(seen);
  for (std::size_t i = 0, j = 0; i < n; ++i)
    if (present(i)) {
      keys[j] = key(i);
      rows[j++] = static_cast<std::uint32_t>(i);
    }
  std::string how;
  auto sorted = rank_u64(std::move(keys), rows.data(), codes.data(), threads, &how);
  if (missing)
    for (std::size_t i = 0; i < n; ++i)
      if (!present(i)) codes[i] = static_cast<std::uint32_t>(sorted.size());
  auto k = std::make_unique<RankedNumbers<T>>(c.name, std::move(sorted), missing, how);
  k->codes = std::move(codes);
  return k;
}

template <class Present>
std::unique_ptr<KeyColumn> encode_strings(const Column& c, int threads, Present present) {
  const std::size_t n = c.length;
  const auto* off = reinterpret_cast<const std::uint64_t*>(c.offsets.data());
  const char* bytes = reinterpret_cast<const char*>(c.values.data());
  const std::size_t size = c.values.size();
  std::uint64_t longest = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(max : longest)
  for (std::size_t i = 0; i < n; ++i) longest = std::max(longest, off[i + 1] - off[i]);
  std::vector<std::uint32_t> codes(n);
  std::vector<std::string_view> sorted;
  bool missing = false;
  std::string how;
  if (longest <= kShortMax) {
    auto d = encode_dictionary<ShortKey, ShortKeyHash>(
        n, threads, [&](std::size_t i) { return load_short(bytes, size, off[i], off[i + 1]); }, present,
        ShortKeyLess{}, codes.data());
    for (const auto row : d.rows) sorted.push_back(c.string(row));
    missing = d.missing;
    how = "hashed per thread as 16-byte keys";
  } else {
    struct ViewHash {
      std::uint64_t operator()(std::string_view s) const { return mr::hash_bytes(s.data(), s.size()); }
    };
    auto d = encode_dictionary<std::string_view, ViewHash>(
        n, threads, [&](std::size_t i) { return c.string(i); }, present, std::less<std::string_view>{}, codes.data());
    sorted = std::move(d.sorted);
    missing = d.missing;
    how = "hashed per thread";
  }
  auto k = std::make_unique<RankedStrings>(c.name, std::move(sorted), missing, how);
  k->codes = std::move(codes);
  return k;
}

// Whether most of a sample of the keys are distinct (then sorting beats a hash table).
bool mostly_distinct(const std::vector<std::uint64_t>& keys) {
  const std::size_t n = keys.size(), s = std::min<std::size_t>(n, 4096);
  if (s < 1024) return false;
  std::vector<std::uint64_t> sample(s);
  for (std::size_t j = 0; j < s; ++j) sample[j] = keys[j * (n / s)];
  std::sort(sample.begin(), sample.end());
  const auto distinct = static_cast<std::size_t>(std::unique(sample.begin(), sample.end()) - sample.begin());
  return distinct * 2 > s;
}

std::vector<std::uint64_t> rank_sorted(std::vector<std::uint64_t> keys, const std::uint32_t* rows,
                                       std::uint32_t* codes, int threads) {
  const std::size_t m = keys.size();
  std::vector<std::uint32_t> at(m);
  std::iota(at.begin(), at.end(), std::uint32_t{0});
  detail::cpu_radix_sort<std::uint64_t, std::uint32_t>(keys, at, false, threads);
  const int T = std::max(1, std::min<int>(threads, static_cast<int>(m / 65536 + 1)));
  std::vector<std::size_t> first_rank(T + 1, 0);
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num();
    std::size_t fresh = 0;
    for (std::size_t j = m * t / T, end = m * (t + 1) / T; j < end; ++j) fresh += j == 0 || keys[j] != keys[j - 1];
    first_rank[t + 1] = fresh;
#pragma omp barrier
#pragma omp single
    for (int u = 0; u < T; ++u) first_rank[u + 1] += first_rank[u];
    std::size_t rank = first_rank[t];
    for (std::size_t j = m * t / T, end = m * (t + 1) / T; j < end; ++j) {
      rank += j == 0 || keys[j] != keys[j - 1];
      codes[rows ? rows[at[j]] : at[j]] = static_cast<std::uint32_t>(rank - 1);
    }
  }
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace

std::vector<std::uint64_t> rank_u64(std::vector<std::uint64_t> keys, const std::uint32_t* rows, std::uint32_t* codes,
                                    int threads, std::string* how) {
  if (mostly_distinct(keys)) {
    if (how) *how = "ranked by a radix sort of (key, row) pairs";
    return rank_sorted(std::move(keys), rows, codes, threads);
  }
  if (how) *how = "hashed per thread";
  const std::size_t m = keys.size();
  std::vector<std::uint32_t> local(rows ? m : 0);
  std::uint32_t* out = rows ? local.data() : codes;
  auto d = encode_dictionary<std::uint64_t, Hash64>(
      m, threads, [&](std::size_t j) { return keys[j]; }, AllPresent{}, std::less<std::uint64_t>{}, out);
  if (rows)
    for (std::size_t j = 0; j < m; ++j) codes[rows[j]] = local[j];
  return std::move(d.sorted);
}

std::unique_ptr<KeyColumn> encode_key_column(const Column& c, int threads) {
  return with_presence(c, [&](auto present) -> std::unique_ptr<KeyColumn> {
    if (c.type == ColumnType::str) return encode_strings(c, threads, present);
    return visit_numeric(c.type, [&](auto t) { return encode_numbers<decltype(t)>(c, threads, present); });
  });
}

}  // namespace tandem::cpu_groupby
