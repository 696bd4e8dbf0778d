// Encoding one key column (see cpu_keys.hpp): numbers by offset from the minimum or by rank,
// strings by rank. Floats are keyed by value: -0.0 as 0.0, every NaN as one NaN after all numbers.
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "groupby/cpu_aggregator.hpp"
#include "groupby/cpu_keys.hpp"
#include "groupby/ops/op_common.hpp"
#include "sort/cpu_radix.hpp"
#include "tandem/core/hash.hpp"

namespace tandem::cpu_groupby {
namespace {

struct Hash64 {
  std::uint64_t operator()(std::uint64_t k) const { return mix64(k); }
};

// A string of at most 15 bytes packed into 16: bytes 0-7 big-endian in hi, bytes 8-14 in the
// top of lo, length + 1 in lo's lowest byte. (hi, lo) order is the strings' byte order, equal
// packings are equal strings, and no packing is all zero.
struct ShortKey {
  std::uint64_t hi, lo;
  bool operator==(const ShortKey&) const = default;
  std::array<std::uint64_t, 2> radix_words() const { return {hi, lo}; }
};
struct ShortKeyLess {
  bool operator()(const ShortKey& a, const ShortKey& b) const { return a.hi != b.hi ? a.hi < b.hi : a.lo < b.lo; }
};
struct ShortKeyHash {
  std::uint64_t operator()(const ShortKey& k) const { return mix64(k.hi * 0x9E3779B97F4A7C15ull ^ k.lo); }
};
constexpr std::size_t kShortMax = 15;

inline ShortKey load_short(const char* bytes, std::size_t size, std::uint64_t begin, std::size_t len) {
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

// The sorted short keys as strings, back to back in key order in one arena (so decoding codes
// in key order reads it front to back, not the input's rows at random).
std::pair<Scratch<std::string_view>, Scratch<char>> unpack_sorted(const Scratch<ShortKey>& keys) {
  Scratch<char> arena(keys.size() * 16);
  Scratch<std::string_view> views(keys.size());
  for (std::size_t j = 0; j < keys.size(); ++j) {
    const std::uint64_t w[2] = {__builtin_bswap64(keys[j].hi), __builtin_bswap64(keys[j].lo)};
    std::memcpy(arena.data() + 16 * j, w, 16);
    views[j] = std::string_view(arena.data() + 16 * j, (keys[j].lo & 0xff) - 1);
  }
  return {std::move(views), std::move(arena)};
}

template <class F>
decltype(auto) with_presence(const Column& c, F&& f) {
  if (c.validity.empty()) return f(AllPresent{});
  return f(BitPresent{reinterpret_cast<const std::uint8_t*>(c.validity.data())});
}

template <class T>
std::uint64_t ordered_key(T v) {
  return to_ordered(agg::normalised(v));
}

// Integers (and floats whose ordered bits happen to lie close): code = ordered value - min.
// A range guessed from a sample is checked row by row: a key outside it gets code 0 and marks
// the column missed, and the caller encodes it again from its bounds.
template <class T, class Present>
class RangeKeys final : public KeyColumn {
 public:
  RangeKeys(const Column& c, Present present, std::uint64_t min, std::uint64_t range, bool guessed = false)
      : c_(c),
        v_(reinterpret_cast<const T*>(c.values.data())),
        present_(present),
        min_(min),
        range_(range),
        guessed_(guessed) {
    card = range + (c.missing_count() > 0 ? 1 : 0);
  }
  void codes(std::size_t begin, std::size_t end, std::uint32_t* out) const override {
    if constexpr (std::is_integral_v<T>)
      if (guessed_) return checked_codes(begin, end, out);
    for (std::size_t i = begin; i < end; ++i)
      out[i - begin] =
          present_(i) ? static_cast<std::uint32_t>(ordered_key(v_[i]) - min_) : static_cast<std::uint32_t>(range_);
  }
  bool missed() const override { return missed_.load(std::memory_order_relaxed); }
  bool guessed() const override { return guessed_; }
  Column decode(std::span<const std::uint32_t> c, int threads) const override {
    return build_numbers<T>(c_.name, c.size(), threads, [&](std::size_t i) -> std::optional<T> {
      if (c[i] >= range_) return std::nullopt;
      return from_ordered<T>(static_cast<ordered_bits_t<T>>(min_ + c[i]));
    });
  }
  std::string how() const override {
    return fmt::format("{} codes by offset from the minimum{}", card, guessed_ ? " of a sample" : "");
  }

 private:
  // The codes of a guessed range, compared as T so that 32-bit keys take 32-bit vector compares.
  void checked_codes(std::size_t begin, std::size_t end, std::uint32_t* out) const {
    using U = std::make_unsigned_t<T>;
    const T lo = from_ordered<T>(static_cast<ordered_bits_t<T>>(min_));
    const T hi = from_ordered<T>(static_cast<ordered_bits_t<T>>(min_ + range_ - 1));
    const auto missing = static_cast<std::uint32_t>(range_);
    std::uint32_t outside = 0;
    for (std::size_t i = begin; i < end; ++i) {
      const T x = v_[i];
      const bool present = present_(i), in = x >= lo && x <= hi;
      outside |= present & !in;
      out[i - begin] =
          present ? (in ? static_cast<std::uint32_t>(static_cast<U>(x) - static_cast<U>(lo)) : 0u) : missing;
    }
    if (outside) missed_.store(true, std::memory_order_relaxed);
  }

  const Column& c_;
  const T* v_;
  Present present_;
  std::uint64_t min_, range_;
  bool guessed_;
  mutable std::atomic<bool> missed_{false};
};

// Keys by rank among the distinct keys: numbers (Sorted = ordered bits) or strings (views).
template <class T, class Sorted>
class RankedColumn final : public KeyColumn {
 public:
  // arena: the bytes the sorted views point into, when the column owns them.
  RankedColumn(std::string name, LocalCodes codes, Scratch<Sorted> sorted, bool missing, std::string how,
               Scratch<char> arena = {})
      : name_(std::move(name)),
        codes_(std::move(codes)),
        sorted_(std::move(sorted)),
        arena_(std::move(arena)),
        how_(std::move(how)) {
    card = sorted_.size() + (missing ? 1 : 0);
  }
  void codes(std::size_t begin, std::size_t end, std::uint32_t* out) const override { codes_.codes(begin, end, out); }
  Column decode(std::span<const std::uint32_t> c, int threads) const override {
    return build_column<T>(name_, c.size(), threads, [&](std::size_t i) -> std::optional<T> {
      if (c[i] >= sorted_.size()) return std::nullopt;
      if constexpr (std::is_same_v<T, std::string_view>) return sorted_[c[i]];
      else return from_ordered<T>(static_cast<ordered_bits_t<T>>(sorted_[c[i]]));
    });
  }
  std::string how() const override { return fmt::format("{} distinct, {}", sorted_.size(), how_); }

 private:
  std::string name_;
  LocalCodes codes_;
  Scratch<Sorted> sorted_;
  Scratch<char> arena_;
  std::string how_;
};

std::uint64_t range_limit(std::size_t n) {
  return std::min<std::uint64_t>(std::max<std::uint64_t>(std::uint64_t{1} << 16, 2 * std::uint64_t{n}),
                                 (std::uint64_t{1} << 31));
}

// The smallest and largest ordered key of the present rows (lo > hi: none). Pieces are handed out
// dynamically: with every core busy, a thread the system delays would hold up a static share.
template <class T, class Present>
std::pair<std::uint64_t, std::uint64_t> key_bounds(const T* v, std::size_t n, int threads, Present present) {
  if constexpr (std::is_integral_v<T> && std::is_same_v<Present, AllPresent>) {
    // Integers order as their ordered keys do: the bounds of the values themselves, a loop the
    // compiler vectorises (the ordered keys' 64-bit compares ran at half the memory's speed).
    T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1 << 16) reduction(min : lo) reduction(max : hi)
    for (std::size_t i = 0; i < n; ++i) {
      lo = std::min(lo, v[i]);
      hi = std::max(hi, v[i]);
    }
    return {ordered_key(lo), ordered_key(hi)};  // none present: max > lowest, so lo > hi
  } else {
    std::uint64_t lo = UINT64_MAX, hi = 0;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1 << 16) reduction(min : lo) reduction(max : hi)
    for (std::size_t i = 0; i < n; ++i)
      if (present(i)) {
        const std::uint64_t k = ordered_key(v[i]);
        lo = std::min(lo, k);
        hi = std::max(hi, k);
      }
    return {lo, hi};
  }
}

// An integer column's range from an even sample of its present rows, widened by an eighth of its
// width on either side, where n is large enough for the pass over the column it saves to count.
// None where the sample holds no present row or the widened range would not index directly.
template <class T, class Present>
std::optional<std::pair<std::uint64_t, std::uint64_t>> sampled_range(const T* v, std::size_t n, Present present) {
  constexpr std::size_t kSample = 1024;
  if (n < (std::size_t{1} << 20)) return std::nullopt;
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (std::size_t j = 0; j < kSample; ++j) {
    const std::size_t i = j * (n / kSample) + (n / kSample) / 2;
    if (!present(i)) continue;
    lo = std::min(lo, ordered_key(v[i]));
    hi = std::max(hi, ordered_key(v[i]));
  }
  if (lo > hi) return std::nullopt;
  const std::uint64_t pad = (hi - lo) / 8 + 64, top = std::numeric_limits<ordered_bits_t<T>>::max();
  lo = lo >= pad ? lo - pad : 0;
  hi = hi <= top - pad ? hi + pad : top;
  if (hi - lo >= range_limit(n)) return std::nullopt;
  return std::pair{lo, hi - lo + 1};
}

template <class T, class Present>
std::unique_ptr<KeyColumn> encode_numbers(const Column& c, int threads, Present present, bool guess_range) {
  const std::size_t n = c.length;
  const T* v = reinterpret_cast<const T*>(c.values.data());
  if constexpr (std::is_integral_v<T>)
    if (guess_range)
      if (const auto r = sampled_range(v, n, present))
        return std::make_unique<RangeKeys<T, Present>>(c, present, r->first, r->second, true);
  const auto [lo, hi] = key_bounds(v, n, threads, present);
  if (lo > hi) return std::make_unique<RangeKeys<T, Present>>(c, present, 0, 0);  // nothing present
  if (hi - lo < range_limit(n)) return std::make_unique<RangeKeys<T, Present>>(c, present, lo, hi - lo + 1);
  Scratch<std::uint64_t> keys(n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < n; ++i) keys[i] = ordered_key(v[i]);
  auto r = rank_u64(
      keys.data(), c.validity.empty() ? nullptr : reinterpret_cast<const std::uint8_t*>(c.validity.data()), n, threads);
  return std::make_unique<RankedColumn<T, std::uint64_t>>(c.name, std::move(r.codes), std::move(r.sorted),
                                                          c.missing_count() > 0, r.how);
}

// How a dictionary numbered its keys, for the report.
const char* numbered(bool by_partition) { return by_partition ? "hashed by partition" : "hashed per thread"; }

template <class Present>
std::unique_ptr<KeyColumn> encode_strings(const Column& c, int threads, Present present) {
  const std::size_t n = c.length;
  const auto* off = reinterpret_cast<const std::uint64_t*>(c.offsets.data());
  const char* bytes = reinterpret_cast<const char*>(c.values.data());
  const std::size_t size = c.values.size();
  using Str = RankedColumn<std::string_view, std::string_view>;
  LocalCodes codes;
  std::atomic<bool> too_long{false};
  auto d = encode_dictionary<ShortKey, ShortKeyHash>(
      n, threads,
      [&](std::size_t i) {
        const std::size_t len = off[i + 1] - off[i];
        if (len > kShortMax) too_long.store(true, std::memory_order_relaxed);
        return load_short(bytes, size, off[i], std::min(len, kShortMax));
      },
      present, ShortKeyLess{}, codes, &too_long);
  if (!too_long.load()) {
    auto [sorted, arena] = unpack_sorted(d.sorted);
    return std::make_unique<Str>(c.name, std::move(codes), std::move(sorted), d.missing,
                                 fmt::format("{} as 16-byte keys", numbered(d.by_partition)), std::move(arena));
  }
  struct ViewHash {
    std::uint64_t operator()(std::string_view s) const { return hash_bytes(s.data(), s.size()); }
  };
  auto g = encode_dictionary<std::string_view, ViewHash>(
      n, threads, [&](std::size_t i) { return c.string(i); }, present, std::less<std::string_view>{}, codes);
  return std::make_unique<Str>(c.name, std::move(codes), std::move(g.sorted), g.missing, numbered(g.by_partition));
}

// Whether most of a sample of the keys are distinct (then sorting beats a hash table).
bool mostly_distinct(const std::uint64_t* keys, std::size_t n) {
  const std::size_t s = std::min<std::size_t>(n, 4096);
  if (s < 1024) return false;
  std::vector<std::uint64_t> sample(s);
  for (std::size_t j = 0; j < s; ++j) sample[j] = keys[j * (n / s)];
  std::sort(sample.begin(), sample.end());
  const auto distinct = static_cast<std::size_t>(std::unique(sample.begin(), sample.end()) - sample.begin());
  return distinct * 2 > s;
}

// Ranks by a stable radix sort of (key, row) pairs of the present rows.
RankedKeys rank_sorted(const std::uint64_t* keys, const std::uint8_t* bits, std::size_t n, int threads) {
  const auto present = [bits](std::size_t i) { return bits == nullptr || ((bits[i >> 3] >> (i & 7)) & 1u); };
  Scratch<std::uint64_t> k;
  Scratch<std::uint32_t> at;
  k.reserve(n);
  at.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (present(i)) {
      k.push_back(keys[i]);
      at.push_back(static_cast<std::uint32_t>(i));
    }
  const std::size_t m = k.size();
  detail::cpu_radix_sort<std::uint64_t, std::uint32_t>(k, at, false, threads);
  RankedKeys r;
  r.codes.local.resize(n);
  const int T = std::max(1, std::min<int>(threads, static_cast<int>(m / 65536 + 1)));
  std::vector<std::size_t> first_rank(T + 1, 0);
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num();
    std::size_t fresh = 0;
    for (std::size_t j = m * t / T, end = m * (t + 1) / T; j < end; ++j) fresh += j == 0 || k[j] != k[j - 1];
    first_rank[t + 1] = fresh;
#pragma omp barrier
#pragma omp single
    for (int u = 0; u < T; ++u) first_rank[u + 1] += first_rank[u];
    std::size_t rank = first_rank[t];
    for (std::size_t j = m * t / T, end = m * (t + 1) / T; j < end; ++j) {
      rank += j == 0 || k[j] != k[j - 1];
      r.codes.local[at[j]] = static_cast<std::uint32_t>(rank - 1);
    }
  }
  k.erase(std::unique(k.begin(), k.end()), k.end());
  r.sorted = std::move(k);
  r.codes.missing = static_cast<std::uint32_t>(r.sorted.size());
  for (std::size_t i = 0; i < n && m < n; ++i)
    if (!present(i)) r.codes.local[i] = kMissingCode;
  r.how = "ranked by a radix sort of (key, row) pairs";
  return r;
}

}  // namespace

RankedKeys rank_u64(const std::uint64_t* keys, const std::uint8_t* bits, std::size_t n, int threads) {
  if (mostly_distinct(keys, n)) return rank_sorted(keys, bits, n, threads);
  const auto present = [bits](std::size_t i) { return bits == nullptr || ((bits[i >> 3] >> (i & 7)) & 1u); };
  RankedKeys r;
  auto d = encode_dictionary<std::uint64_t, Hash64>(
      n, threads, [&](std::size_t i) { return keys[i]; }, present, std::less<std::uint64_t>{}, r.codes);
  r.sorted = std::move(d.sorted);
  r.how = numbered(d.by_partition);
  return r;
}

std::unique_ptr<KeyColumn> encode_key_column(const Column& c, int threads, bool guess_range) {
  return with_presence(c, [&](auto present) -> std::unique_ptr<KeyColumn> {
    if (c.type == ColumnType::str) return encode_strings(c, threads, present);
    return visit_numeric(c.type, [&](auto t) { return encode_numbers<decltype(t)>(c, threads, present, guess_range); });
  });
}

}  // namespace tandem::cpu_groupby
