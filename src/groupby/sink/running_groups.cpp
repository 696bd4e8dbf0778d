#include "groupby/sink/running_groups.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "core/scratch.hpp"
#include "groupby/cpu_aggregator.hpp"
#include "groupby/cpu_output.hpp"
#include "groupby/ops/registry.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"

namespace tandem::sink {
namespace {

using cpu_groupby::Aggregator;
using cpu_groupby::DecomposableAggregator;

constexpr std::size_t kBlockRows = 4096;            // rows whose group ids are found before the states fold them
constexpr std::size_t kPrefetchRows = 16;           // how far ahead a row's hash table slot is asked for
constexpr std::size_t kKeyPrefetchRows = 8;         // how far ahead the key of the group in that slot is
constexpr std::size_t kFirstSlots = 1024;           // hash table slots at the start (a power of two)
constexpr std::uint64_t kTagMask = ~0xffffffffULL;  // a slot: the hash's high half, then group id + 1

// Whether n bytes at a and b are equal: short keys (ids, codes) by two overlapping word loads
// instead of a call to memcmp.
inline bool same_bytes(const char* a, const char* b, std::size_t n) {
  const auto equal_words = [&](auto word) {
    using W = decltype(word);
    W x, y, u, v;
    std::memcpy(&x, a, sizeof(W));
    std::memcpy(&y, b, sizeof(W));
    std::memcpy(&u, a + n - sizeof(W), sizeof(W));
    std::memcpy(&v, b + n - sizeof(W), sizeof(W));
    return ((x ^ y) | (u ^ v)) == 0;
  };
  if (n >= 8 && n <= 16) return equal_words(std::uint64_t{});
  if (n >= 4 && n < 8) return equal_words(std::uint32_t{});
  if (n > 16) return std::memcmp(a, b, n) == 0;
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// Each group's value of one key column, in group order.
class KeyStore {
 public:
  virtual ~KeyStore() = default;
  // Whether group g's key equals row `row` of c (missing equals missing).
  virtual bool equal(std::uint32_t g, const Column& c, std::size_t row) const = 0;
  virtual void append(const Column& c, std::size_t row) = 0;
  virtual void reserve(std::size_t groups) = 0;
  // Asks for what equal(g, ...) reads, a few rows before it is called.
  virtual void prefetch(std::uint32_t g) const = 0;
  // The keys as a column, group order[0], order[1], … (every group once), or group after group
  // where order is null; the store is left empty.
  virtual Column take(const std::string& name, const std::uint32_t* order) = 0;
  virtual std::size_t bytes() const = 0;

 protected:
  bool any_missing_{false};
};

template <class T>
class NumberKeys final : public KeyStore {
 public:
  bool equal(std::uint32_t g, const Column& c, std::size_t row) const override {
    const bool p = c.present(row);
    if (p != (present_[g] != 0)) return false;
    return !p || values_[g] == reinterpret_cast<const T*>(c.values.data())[row];
  }
  void prefetch(std::uint32_t g) const override {
    __builtin_prefetch(values_.data() + g);
    __builtin_prefetch(present_.data() + g);
  }
  void append(const Column& c, std::size_t row) override {
    const bool p = c.present(row);
    values_.push_back(p ? reinterpret_cast<const T*>(c.values.data())[row] : T{});
    present_.push_back(p);
    any_missing_ |= !p;
  }
  void reserve(std::size_t groups) override {
    values_.reserve(groups);
    present_.reserve(groups);
  }
  Column take(const std::string& name, const std::uint32_t* order) override {
    const std::size_t n = values_.size();
    Column out;
    out.name = name;
    out.type = column_type_v<T>;
    out.length = n;
    const auto g = [&](std::size_t i) { return order != nullptr ? order[i] : i; };
    if (any_missing_) out.validity = Buffer::take(make_validity(n, [&](std::size_t i) { return present_[g(i)] != 0; }));
    if (order == nullptr) {
      out.values = Buffer::take(std::move(values_));
    } else {
      Scratch<T> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = values_[order[i]];
      out.values = cpu_groupby::scratch_buffer(std::move(v));
    }
    *this = NumberKeys{};
    return out;
  }
  std::size_t bytes() const override { return values_.capacity() * sizeof(T) + present_.capacity(); }

 private:
  Scratch<T> values_;
  Scratch<std::uint8_t> present_;
};

// Each group's length and first bytes sit together in 16 bytes (one read compares a key of up to
// 12 bytes, and a prefetch can ask for it); only the bytes past those go to the byte store, so
// that short keys (ids, codes) cost 16 bytes a group while running. take() joins them again.
class StringKeys final : public KeyStore {
 public:
  bool equal(std::uint32_t g, const Column& c, std::size_t row) const override {
    const Head& h = heads_[g];
    if (!c.present(row)) return h.length == kMissing;
    const std::string_view s = c.string(row);
    if (h.length != s.size()) return false;
    if (!same_bytes(h.bytes, s.data(), std::min(s.size(), kInline))) return false;
    return s.size() <= kInline || same_bytes(rest_.data() + rest_at_[g], s.data() + kInline, s.size() - kInline);
  }
  void prefetch(std::uint32_t g) const override { __builtin_prefetch(heads_.data() + g); }
  void append(const Column& c, std::size_t row) override {
    Head h{};
    std::string_view s;
    if (c.present(row)) {
      s = c.string(row);
      if (s.size() >= kMissing) throw InputError(fmt::format("column '{}': a key of {} bytes", c.name, s.size()));
      h.length = static_cast<std::uint32_t>(s.size());
      std::memcpy(h.bytes, s.data(), std::min(s.size(), kInline));
    }
    if (s.size() > kInline && !has_rest_) {  // the first longer key
      rest_at_.assign(heads_.size(), 0);
      has_rest_ = true;
    }
    if (has_rest_) rest_at_.push_back(rest_.size());
    if (s.size() > kInline) rest_.insert(rest_.end(), s.begin() + kInline, s.end());
    any_missing_ |= h.length == kMissing;
    heads_.push_back(h);
  }
  void reserve(std::size_t groups) override { heads_.reserve(groups); }
  // Scratch arrays (huge pages, no zeroing pass): a million groups' keys are 20 MB of fresh memory.
  Column take(const std::string& name, const std::uint32_t* order) override {
    const std::size_t n = heads_.size();
    const auto g = [&](std::size_t i) { return order != nullptr ? order[i] : i; };
    Scratch<std::uint64_t> offsets(n + 1);
    offsets[0] = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Head& h = heads_[g(i)];
      offsets[i + 1] = offsets[i] + (h.length == kMissing ? 0 : h.length);
    }
    Scratch<char> bytes(offsets[n]);
    for (std::size_t i = 0; i < n; ++i) {
      const Head& h = heads_[g(i)];
      if (h.length == kMissing) continue;
      std::memcpy(bytes.data() + offsets[i], h.bytes, std::min<std::size_t>(h.length, kInline));
      if (h.length > kInline)
        std::memcpy(bytes.data() + offsets[i] + kInline, rest_.data() + rest_at_[g(i)], h.length - kInline);
    }
    Column out;
    out.name = name;
    out.type = ColumnType::str;
    out.length = n;
    out.values = cpu_groupby::scratch_buffer(std::move(bytes));
    out.offsets = cpu_groupby::scratch_buffer(std::move(offsets));
    if (any_missing_)
      out.validity = Buffer::take(make_validity(n, [&](std::size_t i) { return heads_[g(i)].length != kMissing; }));
    *this = StringKeys{};
    return out;
  }
  std::size_t bytes() const override {
    return rest_.capacity() + rest_at_.capacity() * sizeof(std::uint64_t) + heads_.capacity() * sizeof(Head);
  }

 private:
  static constexpr std::size_t kInline = 12;
  static constexpr std::uint32_t kMissing = UINT32_MAX;  // a missing key's length
  struct Head {
    std::uint32_t length{kMissing};
    char bytes[kInline]{};
  };
  Scratch<Head> heads_;
  std::vector<char> rest_;              // bytes past the first kInline of longer keys, group after group
  std::vector<std::uint64_t> rest_at_;  // where each group's rest starts, once a longer key came
  bool has_rest_{false};
};

std::unique_ptr<KeyStore> key_store(ColumnType type) {
  switch (type) {
    case ColumnType::i32: return std::make_unique<NumberKeys<std::int32_t>>();
    case ColumnType::i64: return std::make_unique<NumberKeys<std::int64_t>>();
    case ColumnType::u32: return std::make_unique<NumberKeys<std::uint32_t>>();
    case ColumnType::u64: return std::make_unique<NumberKeys<std::uint64_t>>();
    case ColumnType::str: return std::make_unique<StringKeys>();
    default: throw Error("group-by sink: running groups hold no float keys");
  }
}

std::unique_ptr<DecomposableAggregator> decomposable(const Aggregation& a, const Column* input) {
  auto made = agg::operator_info(a.op).make_cpu(a, input);
  auto* d = dynamic_cast<DecomposableAggregator*>(made.get());
  if (d == nullptr) throw Error("group-by sink: running groups hold no holistic aggregation");
  made.release();
  return std::unique_ptr<DecomposableAggregator>(d);
}

Aggregation count_rows() {
  Aggregation a;
  a.op = AggOp::count_rows;
  return a;
}

}  // namespace

bool keeps_running_groups(const SinkPlan& plan, const Table& input) {
  for (const auto& k : plan.spec.by)
    if (!is_integer(input.column(k).type) && input.column(k).type != ColumnType::str) return false;
  for (const auto& a : plan.partial.aggs) {
    if (a.op == AggOp::first || a.op == AggOp::last || agg::operator_info(a.op).holistic) return false;
    if (agg::operator_info(a.op).reads_column && input.column(a.column).type == ColumnType::str && a.op != AggOp::count)
      return false;
  }
  return true;
}

struct RunningGroups::Impl {
  const SinkPlan& plan;
  std::vector<std::unique_ptr<KeyStore>> keys;
  std::vector<std::size_t> key_index;  // 0, 1, …: the keys lead every engine_input
  Scratch<std::uint64_t> slots = Scratch<std::uint64_t>(kFirstSlots, 0);
  Scratch<std::uint64_t> group_hash;
  std::uint32_t groups{0};
  std::size_t rows_added{0};
  Scratch<std::uint64_t> row_hash;  // a chunk's, kept for the next: no fresh pages for every chunk
  // The engine's row count, each aggregation's state (null for count(), which is the row count),
  // and missing values per group of each column read: present = rows - missing is what the states
  // finalise with (counted only for chunks where the column has missing values).
  std::unique_ptr<DecomposableAggregator> rows;
  std::vector<std::unique_ptr<DecomposableAggregator>> by_agg;
  std::map<std::string, Scratch<std::int64_t>> missing;

  Impl(const SinkPlan& p, const Table& input) : plan(p) {
    for (const auto& k : plan.spec.by) keys.push_back(key_store(input.column(k).type));
    key_index.resize(keys.size());
    std::iota(key_index.begin(), key_index.end(), std::size_t{0});
    rows = decomposable(count_rows(), nullptr);
    for (const auto& a : plan.partial.aggs) {
      if (!agg::operator_info(a.op).reads_column) {
        by_agg.push_back(nullptr);
        continue;
      }
      by_agg.push_back(decomposable(a, &input.column(a.column)));
      missing[a.column];
    }
    for_each_state([](DecomposableAggregator& d) { d.allocate(1, 0); });
  }

  template <class F>
  void for_each_state(F&& f) {
    f(*rows);
    for (auto& d : by_agg)
      if (d) f(*d);
  }

  void count_missing(const Column& c, Scratch<std::int64_t>& m, const std::uint32_t* gid, std::size_t b,
                     std::size_t e) const {
    if (c.validity.empty()) return;
    m.resize(groups, 0);
    for (std::size_t i = b; i < e; ++i) m[gid[i - b]] += !c.present(i);
  }

  // Places every group again in a table of `size` slots (a power of two).
  void rehash(std::size_t size) {
    Scratch<std::uint64_t> bigger(size, 0);
    const std::size_t mask = bigger.size() - 1;
    for (std::uint32_t g = 0; g < groups; ++g) {
      std::size_t pos = group_hash[g] & mask;
      while (bigger[pos] != 0) pos = (pos + 1) & mask;
      bigger[pos] = (group_hash[g] & kTagMask) | (g + 1);
    }
    slots.swap(bigger);
  }

  std::uint32_t group_of(const std::vector<const Column*>& cols, std::size_t row, std::uint64_t h) {
    const std::size_t mask = slots.size() - 1;
    std::size_t pos = h & mask;
    for (;; pos = (pos + 1) & mask) {
      const std::uint64_t s = slots[pos];
      if (s == 0) break;
      if ((s & kTagMask) != (h & kTagMask)) continue;
      const auto g = static_cast<std::uint32_t>(s - 1);
      bool same = true;
      for (std::size_t k = 0; k < cols.size() && same; ++k) same = keys[k]->equal(g, *cols[k], row);
      if (same) return g;
    }
    const std::uint32_t g = groups++;
    for (std::size_t k = 0; k < cols.size(); ++k) keys[k]->append(*cols[k], row);
    group_hash.push_back(h);
    slots[pos] = (h & kTagMask) | (std::uint64_t{g} + 1);
    if (std::size_t{groups} * 2 > slots.size()) rehash(slots.size() * 2);
    return g;
  }

  void fold(const Table& input, std::size_t begin, std::size_t end, const std::uint64_t* hashes);
  Table take_in(const std::uint32_t* order);
};

RunningGroups::RunningGroups(const SinkPlan& plan, const Table& input) : impl_(std::make_unique<Impl>(plan, input)) {}

RunningGroups::~RunningGroups() = default;

void RunningGroups::reserve(std::size_t groups) {
  Impl& s = *impl_;
  if (groups <= s.groups) return;
  if (groups * 2 > s.slots.size()) s.rehash(std::bit_ceil(groups * 2));
  s.group_hash.reserve(groups);
  for (auto& k : s.keys) k->reserve(groups);
  s.for_each_state([&](DecomposableAggregator& d) { d.grow(groups); });
}

std::size_t RunningGroups::groups() const { return impl_->groups; }

std::size_t RunningGroups::rows() const { return impl_->rows_added; }

std::size_t RunningGroups::bytes() const {
  const Impl& s = *impl_;
  std::size_t b = (s.slots.size() + s.group_hash.capacity() + s.row_hash.capacity()) * sizeof(std::uint64_t);
  for (const auto& k : s.keys) b += k->bytes();
  for (const auto& [name, m] : s.missing) b += m.capacity() * sizeof(std::int64_t);
  const_cast<Impl&>(s).for_each_state([&](DecomposableAggregator& d) { b += d.state_bytes() * s.groups; });
  return b;
}

// Rows [begin, end) of input, whose key hashes are hashes[begin .. end).
void RunningGroups::Impl::fold(const Table& input, std::size_t begin, std::size_t end, const std::uint64_t* hashes) {
  std::vector<const Column*> cols;
  for (const auto& k : plan.spec.by) cols.push_back(&input.column(k));
  for (std::size_t i = 0; i < plan.partial.aggs.size(); ++i)
    if (by_agg[i]) by_agg[i]->read_from(&input.column(plan.partial.aggs[i].column));
  rows_added += end - begin;
  std::vector<std::uint32_t> gid(kBlockRows);
  for (std::size_t b = begin; b < end; b += kBlockRows) {
    const std::size_t e = std::min(end, b + kBlockRows);
    for (std::size_t i = b; i < e; ++i) {
      // Two stages ahead, so that the cache misses overlap this row's probe: the slot of a row
      // kPrefetchRows on, then the stored key of the group that a slot kKeyPrefetchRows on names.
      const std::size_t m = slots.size() - 1;
      if (i + kPrefetchRows < end) __builtin_prefetch(&slots[hashes[i + kPrefetchRows] & m]);
      if (i + kKeyPrefetchRows < end) {
        const std::uint64_t h = hashes[i + kKeyPrefetchRows], slot = slots[h & m];
        if (slot != 0 && (slot & kTagMask) == (h & kTagMask))
          for (const auto& k : keys) k->prefetch(static_cast<std::uint32_t>(slot - 1));
      }
      gid[i - b] = group_of(cols, i, hashes[i]);
    }
    for_each_state([&](DecomposableAggregator& d) {
      d.grow(groups);
      d.update(0, gid.data(), b, e);
    });
    for (auto& [name, m] : missing) count_missing(input.column(name), m, gid.data(), b, e);
  }
}

void RunningGroups::add(const Table& input) {
  Impl& s = *impl_;
  const std::size_t n = input.rows();
  s.row_hash.resize(n);
  hash_rows(input, s.key_index, std::span<std::uint64_t>(s.row_hash.data(), n));
  s.fold(input, 0, n, s.row_hash.data());
}

void RunningGroups::add(const Table& input, std::size_t begin, std::size_t end,
                        std::span<const std::uint64_t> hashes) {
  if (begin > end || end > input.rows() || hashes.size() != input.rows())
    throw Error(fmt::format("running groups: rows {}..{} of {} with {} hashes", begin, end, input.rows(), hashes.size()));
  impl_->fold(input, begin, end, hashes.data());
}

// The groups in the given order (every group once; group after group where null), then empty.
Table RunningGroups::Impl::take_in(const std::uint32_t* order) {
  Scratch<std::uint32_t> all;
  if (order == nullptr) {
    all.resize(groups);
    std::iota(all.begin(), all.end(), std::uint32_t{0});
    order = all.data();
  }
  const std::span<const std::uint32_t> in_order(order, groups);
  const std::int64_t* counts = rows->counts();
  // A column that never missed a value is present in every row of its groups.
  std::map<std::string, Scratch<std::int64_t>> present;
  std::map<std::string, const std::int64_t*> present_in;
  for (auto& [name, m] : missing) {
    present_in[name] = counts;
    if (m.empty()) continue;
    auto& p = present[name];
    p.resize(groups);
    for (std::size_t g = 0; g < groups; ++g) p[g] = counts[g] - (g < m.size() ? m[g] : 0);
    present_in[name] = p.data();
    m.clear();
  }
  Table out;
  for (std::size_t k = 0; k < keys.size(); ++k)
    out.add(keys[k]->take(plan.spec.by[k], all.empty() ? order : nullptr));
  for (std::size_t i = 0; i < plan.partial.aggs.size(); ++i) {
    const Aggregation& a = plan.partial.aggs[i];
    if (!by_agg[i]) {
      out.add(cpu_groupby::build_numbers<std::int64_t>(output_names(a).front(), in_order.size(), 1, [&](std::size_t j) {
        return std::optional(counts[in_order[j]]);
      }));
      continue;
    }
    for (auto& c : by_agg[i]->finish(in_order, present_in.at(a.column), 1)) out.add(std::move(c));
  }
  slots.assign(kFirstSlots, 0);
  group_hash = {};
  groups = 0;
  rows_added = 0;
  for_each_state([](DecomposableAggregator& d) { d.allocate(1, 0); });
  return out;
}

Table RunningGroups::take() { return impl_->take_in(nullptr); }

SplitGroups RunningGroups::take_split(int bits) {
  Impl& s = *impl_;
  if (bits < 1 || bits > 24) throw Error(fmt::format("running groups: {} partition bits", bits));
  const int shift = 64 - bits;
  SplitGroups out;
  out.starts.assign((std::size_t{1} << bits) + 1, 0);
  for (std::uint32_t g = 0; g < s.groups; ++g) ++out.starts[(s.group_hash[g] >> shift) + 1];
  for (std::size_t p = 1; p < out.starts.size(); ++p) out.starts[p] += out.starts[p - 1];
  std::vector<std::size_t> next(out.starts.begin(), out.starts.end() - 1);
  Scratch<std::uint32_t> order(s.groups);
  out.hashes.resize(s.groups);
  for (std::uint32_t g = 0; g < s.groups; ++g) {
    const std::size_t at = next[s.group_hash[g] >> shift]++;
    order[at] = g;
    out.hashes[at] = s.group_hash[g];
  }
  out.groups = s.take_in(order.data());
  return out;
}

}  // namespace tandem::sink
