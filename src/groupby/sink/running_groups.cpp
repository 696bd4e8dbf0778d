#include "groupby/sink/running_groups.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <numeric>
#include <typeinfo>

#include <fmt/format.h>

#include "core/scratch.hpp"
#include "groupby/cpu_aggregator.hpp"
#include "groupby/cpu_output.hpp"
#include "groupby/ops/registry.hpp"
#include "groupby/sink/hash_partitions.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::sink {
namespace {

using cpu_groupby::Aggregator;
using cpu_groupby::DecomposableAggregator;

constexpr std::size_t kBlockRows = 4096;            // rows whose group ids are found before the states fold them
constexpr std::size_t kPrefetchRows = 16;           // how far ahead a row's hash table slot is asked for
constexpr std::size_t kKeyPrefetchRows = 8;         // how far ahead the key of the group in that slot is
constexpr std::size_t kFirstSlots = 1024;           // hash table slots at the start (a power of two)
constexpr std::uint64_t kTagMask = ~0xffffffffULL;  // a slot: the hash's high half, then group id + 1
constexpr std::uint32_t kNoGroup = UINT32_MAX;

// What records are allocated in: aligned for any state (a 128-bit integer sum).
struct alignas(16) RecordUnit {
  std::byte bytes[16];
};

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
  // The same for group og of another store of this type (merging tables).
  virtual bool equal_group(std::uint32_t g, const KeyStore& other, std::uint32_t og) const = 0;
  virtual void append_group(const KeyStore& other, std::uint32_t og) = 0;
  virtual void reserve(std::size_t groups) = 0;
  // Asks for what equal(g, ...) reads, a few rows before it is called.
  virtual void prefetch(std::uint32_t g) const = 0;
  // The keys as a column (the store is left empty).
  virtual Column take(const std::string& name) = 0;
  virtual std::size_t bytes() const = 0;

 protected:
  bool any_missing_{false};
};

template <class T>
class NumberKeys final : public KeyStore {
 public:
  bool equal(std::uint32_t g, const Column& c, std::size_t row) const override {
    const bool p = c.present(row);
    // No group's key missing: every group's is present, and present_ (a cache miss more) need not be read.
    if (any_missing_ ? p != (present_[g] != 0) : !p) return false;
    return !p || values_[g] == reinterpret_cast<const T*>(c.values.data())[row];
  }
  void prefetch(std::uint32_t g) const override {
    __builtin_prefetch(values_.data() + g);
    if (any_missing_) __builtin_prefetch(present_.data() + g);
  }
  void append(const Column& c, std::size_t row) override {
    const bool p = c.present(row);
    values_.push_back(p ? reinterpret_cast<const T*>(c.values.data())[row] : T{});
    present_.push_back(p);
    any_missing_ |= !p;
  }
  bool equal_group(std::uint32_t g, const KeyStore& other, std::uint32_t og) const override {
    const auto& o = static_cast<const NumberKeys&>(other);
    return present_[g] == o.present_[og] && values_[g] == o.values_[og];  // a missing key's value is T{}
  }
  void append_group(const KeyStore& other, std::uint32_t og) override {
    const auto& o = static_cast<const NumberKeys&>(other);
    values_.push_back(o.values_[og]);
    present_.push_back(o.present_[og]);
    any_missing_ |= o.present_[og] == 0;
  }
  void reserve(std::size_t groups) override {
    values_.reserve(groups);
    present_.reserve(groups);
  }
  Column take(const std::string& name) override {
    Column out;
    out.name = name;
    out.type = column_type_v<T>;
    out.length = values_.size();
    if (any_missing_) out.validity = Buffer::take(validity());
    out.values = Buffer::take(std::move(values_));
    *this = NumberKeys{};
    return out;
  }
  std::size_t bytes() const override { return values_.capacity() * sizeof(T) + present_.capacity(); }

 private:
  std::vector<std::uint8_t> validity() const {
    if (!any_missing_) return {};
    return make_validity(present_.size(), [&](std::size_t g) { return present_[g] != 0; });
  }
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
  bool equal_group(std::uint32_t g, const KeyStore& other, std::uint32_t og) const override {
    const auto& o = static_cast<const StringKeys&>(other);
    const Head &h = heads_[g], &oh = o.heads_[og];
    // Bytes past a key's length are zero in its head: one comparison covers length and head.
    if (std::memcmp(&h, &oh, sizeof(Head)) != 0) return false;
    return h.length == kMissing || h.length <= kInline ||
           std::memcmp(rest_.data() + rest_at_[g], o.rest_.data() + o.rest_at_[og], h.length - kInline) == 0;
  }
  void append_group(const KeyStore& other, std::uint32_t og) override {
    const auto& o = static_cast<const StringKeys&>(other);
    const Head& h = o.heads_[og];
    const bool longer = h.length != kMissing && h.length > kInline;
    if (longer && !has_rest_) {  // the first longer key
      rest_at_.assign(heads_.size(), 0);
      has_rest_ = true;
    }
    if (has_rest_) rest_at_.push_back(rest_.size());
    if (longer) {
      const char* from = o.rest_.data() + o.rest_at_[og];
      rest_.insert(rest_.end(), from, from + (h.length - kInline));
    }
    any_missing_ |= h.length == kMissing;
    heads_.push_back(h);
  }
  void reserve(std::size_t groups) override { heads_.reserve(groups); }
  // Scratch arrays (huge pages, no zeroing pass): a million groups' keys are 20 MB of fresh memory.
  Column take(const std::string& name) override {
    const std::size_t n = heads_.size();
    Scratch<std::uint64_t> offsets(n + 1);
    offsets[0] = 0;
    for (std::size_t g = 0; g < n; ++g)
      offsets[g + 1] = offsets[g] + (heads_[g].length == kMissing ? 0 : heads_[g].length);
    Scratch<char> bytes(offsets[n]);
    for (std::size_t g = 0; g < n; ++g) {
      const Head& h = heads_[g];
      if (h.length == kMissing) continue;
      std::memcpy(bytes.data() + offsets[g], h.bytes, std::min<std::size_t>(h.length, kInline));
      if (h.length > kInline)
        std::memcpy(bytes.data() + offsets[g] + kInline, rest_.data() + rest_at_[g], h.length - kInline);
    }
    Column out;
    out.name = name;
    out.type = ColumnType::str;
    out.length = n;
    out.values = cpu_groupby::scratch_buffer(std::move(bytes));
    out.offsets = cpu_groupby::scratch_buffer(std::move(offsets));
    if (any_missing_)
      out.validity = Buffer::take(make_validity(n, [&](std::size_t g) { return heads_[g].length != kMissing; }));
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
  // The engine's row count, each aggregation's state (null for count() and count(col): the rows,
  // and the rows less the column's missing values), and missing values per group of each column
  // read: present = rows - missing is what the states finalise with (counted only for chunks
  // where the column has missing values).
  std::unique_ptr<DecomposableAggregator> rows;
  std::vector<std::unique_ptr<DecomposableAggregator>> by_agg;
  std::map<std::string, Scratch<std::int64_t>> missing;
  // The states of `rows` and by_agg, group after group in records of `stride` bytes: a row's
  // states are one or two cache lines instead of a line in an array for each.
  std::vector<const DecomposableAggregator*> states;
  std::vector<std::size_t> state_at;  // each state's offset in a record
  std::size_t stride{0};
  Scratch<RecordUnit> records;
  std::size_t recorded{0};  // groups whose records exist

  Impl(const SinkPlan& p, const Table& input) : plan(p) {
    for (const auto& k : plan.spec.by) keys.push_back(key_store(input.column(k).type));
    key_index.resize(keys.size());
    std::iota(key_index.begin(), key_index.end(), std::size_t{0});
    rows = decomposable(count_rows(), nullptr);
    for (const auto& a : plan.partial.aggs) {
      const bool reads = agg::operator_info(a.op).reads_column;
      if (reads) missing[a.column];
      by_agg.push_back(reads && a.op != AggOp::count ? decomposable(a, &input.column(a.column)) : nullptr);
    }
    lay_out_records();
  }

  // Widest alignment first, so that no state needs padding before it.
  void lay_out_records() {
    states.push_back(rows.get());
    for (const auto& d : by_agg)
      if (d) states.push_back(d.get());
    std::vector<std::size_t> order(states.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return states[a]->state_align() > states[b]->state_align(); });
    state_at.resize(states.size());
    std::size_t widest = 1;
    for (const std::size_t i : order) {
      const std::size_t align = states[i]->state_align();
      if (align > alignof(RecordUnit)) throw Error("running groups: a state aligned wider than its record");
      widest = std::max(widest, align);
      state_at[i] = (stride + align - 1) / align * align;
      stride = state_at[i] + states[i]->state_bytes();
    }
    stride = (stride + widest - 1) / widest * widest;
  }

  // State i of group 0 (null before any record exists).
  std::byte* state_bytes(std::size_t i) {
    return records.empty() ? nullptr : reinterpret_cast<std::byte*>(records.data()) + state_at[i];
  }
  const std::byte* state_bytes(std::size_t i) const {
    return records.empty() ? nullptr : reinterpret_cast<const std::byte*>(records.data()) + state_at[i];
  }
  std::size_t record_units(std::size_t groups) const {
    return (groups * stride + sizeof(RecordUnit) - 1) / sizeof(RecordUnit);
  }

  // Records for groups [0, n), the new ones at each state's identity.
  void grow_records(std::size_t n) {
    if (n <= recorded) return;
    records.resize(record_units(n));
    for (std::size_t i = 0; i < states.size(); ++i) states[i]->identity_at(state_bytes(i), stride, recorded, n);
    recorded = n;
  }

  void prefetch_record(std::uint32_t g) const {
    if (g >= recorded) return;  // added in this block: its record comes at the block's end
    const std::byte* r = reinterpret_cast<const std::byte*>(records.data()) + std::size_t{g} * stride;
    __builtin_prefetch(r);
    __builtin_prefetch(r + stride - 1);
  }

  // Two stages ahead, so that the cache misses overlap the probes before them: the slot of hash
  // `far`, and the key and states of the group in the slot of hash `near` (asked for a few probes
  // ago).
  void prefetch_probe(std::uint64_t far, std::uint64_t near) const {
    const std::size_t mask = slots.size() - 1;
    __builtin_prefetch(&slots[far & mask]);
    const std::uint64_t slot = slots[near & mask];
    if (slot == 0 || (slot & kTagMask) != (near & kTagMask)) return;
    const auto g = static_cast<std::uint32_t>(slot - 1);
    for (const auto& k : keys) k->prefetch(g);
    prefetch_record(g);
  }

  // Folds the states and missing counts of groups from[j] of table o into groups to[j] here,
  // j < n, whose records exist (missing counts sized for them).
  void fold_groups(const Impl& o, const std::uint32_t* from, const std::uint32_t* to, std::size_t n) {
    for (std::size_t k = 0; k < states.size(); ++k)
      states[k]->merge_at(state_bytes(k), stride, o.state_bytes(k), o.stride, from, to, n);
    for (auto& [name, m] : missing) {
      const Scratch<std::int64_t>& theirs = o.missing.at(name);
      for (std::size_t j = 0; j < n; ++j)
        if (from[j] < theirs.size()) m[to[j]] += theirs[from[j]];
    }
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

  // The group whose key hash is h and whose keys same(k, g) says equal, or kNoGroup and the empty
  // slot where it would go.
  template <class Same>
  std::uint32_t find(std::uint64_t h, Same&& same, std::size_t& pos) const {
    const std::size_t mask = slots.size() - 1;
    for (pos = h & mask;; pos = (pos + 1) & mask) {
      const std::uint64_t s = slots[pos];
      if (s == 0) return kNoGroup;
      if ((s & kTagMask) != (h & kTagMask)) continue;
      const auto g = static_cast<std::uint32_t>(s - 1);
      bool equal = true;
      for (std::size_t k = 0; k < keys.size() && equal; ++k) equal = same(k, g);
      if (equal) return g;
    }
  }

  // The group whose key hash is h and whose keys same(k, g) says equal, added by append(k) when
  // there is none.
  template <class Same, class Append>
  std::uint32_t find_or_add(std::uint64_t h, Same&& same, Append&& append) {
    std::size_t pos = 0;
    if (const std::uint32_t found = find(h, same, pos); found != kNoGroup) return found;
    const std::uint32_t g = groups++;
    for (std::size_t k = 0; k < keys.size(); ++k) append(k);
    group_hash.push_back(h);
    slots[pos] = (h & kTagMask) | (std::uint64_t{g} + 1);
    if (std::size_t{groups} * 2 > slots.size()) rehash(slots.size() * 2);
    return g;
  }

  std::uint32_t group_of(const std::vector<const Column*>& cols, std::size_t row, std::uint64_t h) {
    return find_or_add(
        h, [&](std::size_t k, std::uint32_t g) { return keys[k]->equal(g, *cols[k], row); },
        [&](std::size_t k) { keys[k]->append(*cols[k], row); });
  }

  // group_of for group og of another table, whose key hash is h.
  std::uint32_t group_of_group(const Impl& other, std::uint32_t og, std::uint64_t h) {
    return find_or_add(
        h, [&](std::size_t k, std::uint32_t g) { return keys[k]->equal_group(g, *other.keys[k], og); },
        [&](std::size_t k) { keys[k]->append_group(*other.keys[k], og); });
  }
};

RunningGroups::RunningGroups(const SinkPlan& plan, const Table& input) : impl_(std::make_unique<Impl>(plan, input)) {}

RunningGroups::~RunningGroups() = default;

void RunningGroups::reserve(std::size_t groups) {
  Impl& s = *impl_;
  if (groups <= s.groups) return;
  if (groups * 2 > s.slots.size()) s.rehash(std::bit_ceil(groups * 2));
  s.group_hash.reserve(groups);
  for (auto& k : s.keys) k->reserve(groups);
  s.records.reserve(s.record_units(groups));
}

std::size_t RunningGroups::groups() const { return impl_->groups; }

std::size_t RunningGroups::rows() const { return impl_->rows_added; }

std::size_t RunningGroups::bytes() const {
  const Impl& s = *impl_;
  std::size_t b = (s.slots.size() + s.group_hash.capacity() + s.row_hash.capacity()) * sizeof(std::uint64_t);
  for (const auto& k : s.keys) b += k->bytes();
  for (const auto& [name, m] : s.missing) b += m.capacity() * sizeof(std::int64_t);
  b += s.records.capacity() * sizeof(RecordUnit);
  return b;
}

void RunningGroups::add(const Table& input) { add(input, 0, input.rows()); }

void RunningGroups::add(const Table& input, std::size_t begin, std::size_t end) {
  Impl& s = *impl_;
  end = std::min(end, input.rows());
  if (begin >= end) return;
  const std::size_t n = end - begin;
  std::vector<const Column*> cols;
  for (const auto& k : s.plan.spec.by) cols.push_back(&input.column(k));
  for (std::size_t i = 0; i < s.plan.partial.aggs.size(); ++i)
    if (s.by_agg[i]) s.by_agg[i]->read_from(&input.column(s.plan.partial.aggs[i].column));
  s.rows_added += n;
  s.row_hash.resize(n);
  const std::span<std::uint64_t> hashes(s.row_hash.data(), n);  // hashes[i - begin]: row i's
  hash_rows_from(input, s.key_index, begin, hashes);
  std::vector<std::uint32_t> gid(kBlockRows);
  for (std::size_t b = begin; b < end; b += kBlockRows) {
    const std::size_t e = std::min(end, b + kBlockRows);
    for (std::size_t i = b; i < e; ++i) {
      if (i + kPrefetchRows < end)
        s.prefetch_probe(hashes[i - begin + kPrefetchRows], hashes[i - begin + kKeyPrefetchRows]);
      gid[i - b] = s.group_of(cols, i, hashes[i - begin]);
    }
    s.grow_records(s.groups);
    for (std::size_t k = 0; k < s.states.size(); ++k)
      s.states[k]->update_at(s.state_bytes(k), s.stride, gid.data(), b, e);
    for (auto& [name, m] : s.missing) s.count_missing(input.column(name), m, gid.data(), b, e);
  }
}

namespace {

void check_same_plan(const RunningGroups::Impl& s, const RunningGroups::Impl& o) {
  if (o.keys.size() != s.keys.size() || o.states.size() != s.states.size() || o.stride != s.stride)
    throw Error("running groups: merging a table of another plan");
  for (std::size_t k = 0; k < s.states.size(); ++k)
    if (typeid(*o.states[k]) != typeid(*s.states[k])) throw Error("running groups: merging a table of another plan");
}

}  // namespace

void RunningGroups::merge(const RunningGroups& other, std::span<const std::uint32_t> from) {
  Impl& s = *impl_;
  const Impl& o = *other.impl_;
  check_same_plan(s, o);
  const std::size_t n = from.size();
  std::vector<std::uint32_t> to(kBlockRows);
  for (std::size_t b = 0; b < n; b += kBlockRows) {
    const std::size_t e = std::min(n, b + kBlockRows);
    for (std::size_t i = b; i < e; ++i) {
      // The other table's groups lie all over it: their hash, keys and states asked for two
      // stages ahead, this table's slot for the hash one stage ahead.
      if (i + 2 * kPrefetchRows < n) {
        const std::uint32_t f = from[i + 2 * kPrefetchRows];
        __builtin_prefetch(&o.group_hash[f]);
        for (const auto& k : o.keys) k->prefetch(f);
        o.prefetch_record(f);
      }
      if (i + kPrefetchRows < n)
        __builtin_prefetch(&s.slots[o.group_hash[from[i + kPrefetchRows]] & (s.slots.size() - 1)]);
      to[i - b] = s.group_of_group(o, from[i], o.group_hash[from[i]]);
    }
    s.grow_records(s.groups);
    for (auto& [name, m] : s.missing)
      if (!o.missing.at(name).empty()) m.resize(s.groups, 0);
    s.fold_groups(o, from.data() + b, to.data(), e - b);
  }
  s.rows_added += n;
}

bool RunningGroups::absorb(const RunningGroups& other, int threads, double most_missing) {
  Impl& s = *impl_;
  const Impl& o = *other.impl_;
  check_same_plan(s, o);
  const std::size_t n = o.groups;
  constexpr std::size_t kPiece = std::size_t{1} << 14;
  const std::size_t pieces = (n + kPiece - 1) / kPiece;
  // Where each of the other table's groups is here: read-only, so pieces go to threads.
  Scratch<std::uint32_t> where(n);
  parallel_for(pieces, threads, [&](std::size_t p) {
    const std::size_t b = p * kPiece, e = std::min(n, b + kPiece);
    for (std::size_t og = b; og < e; ++og) {
      if (og + kPrefetchRows < e)
        s.prefetch_probe(o.group_hash[og + kPrefetchRows], o.group_hash[og + kKeyPrefetchRows]);
      std::size_t pos = 0;
      where[og] = s.find(
          o.group_hash[og],
          [&](std::size_t k, std::uint32_t g) {
            return s.keys[k]->equal_group(g, *o.keys[k], static_cast<std::uint32_t>(og));
          },
          pos);
    }
  });
  Scratch<std::uint32_t> missing;
  for (std::size_t og = 0; og < n; ++og)
    if (where[og] == kNoGroup) missing.push_back(static_cast<std::uint32_t>(og));
  if (static_cast<double>(missing.size()) > most_missing * static_cast<double>(n)) return false;
  for (auto& [name, m] : s.missing)
    if (!o.missing.at(name).empty()) m.resize(s.groups, 0);
  // The found groups' states folded in: distinct groups there are distinct groups here, so
  // threads fold disjoint pieces without touching the same state.
  parallel_for(pieces, threads, [&](std::size_t p) {
    const std::size_t b = p * kPiece, e = std::min(n, b + kPiece);
    std::vector<std::uint32_t> from, to;
    for (std::size_t og = b; og < e; ++og)
      if (where[og] != kNoGroup) {
        from.push_back(static_cast<std::uint32_t>(og));
        to.push_back(where[og]);
      }
    for (std::size_t j = 0; j < to.size(); ++j) s.prefetch_record(to[j]);  // a piece's records fit L2
    s.fold_groups(o, from.data(), to.data(), to.size());
  });
  s.rows_added += n - missing.size();
  merge(other, missing);  // the groups new here, one at a time
  return true;
}

GroupPartitions RunningGroups::partitions(int bits) const {
  const Impl& s = *impl_;
  if (bits < 1 || bits > 24) throw Error(fmt::format("running groups: {} partition bits", bits));
  GroupPartitions p{{}, Scratch<std::uint32_t>(s.groups)};
  p.starts = order_by_top_bits(std::span<const std::uint64_t>(s.group_hash.data(), s.groups), bits, p.ids.data());
  return p;
}

namespace {

// Back to no groups, with the keys and missing counts already taken.
void reset(RunningGroups::Impl& s) {
  s.slots.assign(kFirstSlots, 0);
  s.group_hash = {};
  s.groups = 0;
  s.rows_added = 0;
  s.records = {};
  s.recorded = 0;
}

}  // namespace

Table RunningGroups::take() {
  Impl& s = *impl_;
  Scratch<std::uint32_t> all(s.groups);
  std::iota(all.begin(), all.end(), std::uint32_t{0});
  Scratch<std::int64_t> row_counts(s.groups);
  for (std::size_t g = 0; g < s.groups; ++g)
    std::memcpy(&row_counts[g], s.state_bytes(0) + g * s.stride, sizeof(std::int64_t));  // states[0]: the row count
  const std::int64_t* rows = row_counts.data();
  // A column that never missed a value is present in every row of its groups.
  std::map<std::string, Scratch<std::int64_t>> present;
  std::map<std::string, const std::int64_t*> present_in;
  for (auto& [name, m] : s.missing) {
    present_in[name] = rows;
    if (m.empty()) continue;
    auto& p = present[name];
    p.resize(s.groups);
    for (std::size_t g = 0; g < s.groups; ++g) p[g] = rows[g] - (g < m.size() ? m[g] : 0);
    present_in[name] = p.data();
    m.clear();
  }
  Table out;
  for (std::size_t k = 0; k < s.keys.size(); ++k) out.add(s.keys[k]->take(s.plan.spec.by[k]));
  std::size_t state = 1;  // states[0] is the row count
  for (std::size_t i = 0; i < s.plan.partial.aggs.size(); ++i) {
    const Aggregation& a = s.plan.partial.aggs[i];
    if (!s.by_agg[i]) {
      const std::int64_t* counts = a.op == AggOp::count ? present_in.at(a.column) : rows;
      out.add(cpu_groupby::build_numbers<std::int64_t>(output_names(a).front(), all.size(), 1,
                                                       [&](std::size_t g) { return std::optional(counts[g]); }));
      continue;
    }
    const std::size_t k = state++;
    for (auto& c : s.states[k]->finish_at(s.state_bytes(k), s.stride, all, present_in.at(a.column), 1))
      out.add(std::move(c));
  }
  reset(s);
  return out;
}

void RunningGroups::clear() {
  Impl& s = *impl_;
  for (std::size_t k = 0; k < s.keys.size(); ++k) (void)s.keys[k]->take(s.plan.spec.by[k]);
  for (auto& [name, m] : s.missing) m.clear();
  reset(s);
}

}  // namespace tandem::sink
