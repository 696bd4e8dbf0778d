// The CPU engine's view of one aggregation: the operator (src/groupby/ops/) run over the input
// column with a group id per row. Decomposable operators keep one state per group and slot
// (slots hold partial states of fixed row ranges, merged in row order); holistic ones compute
// each group from its gathered values. The engine (cpu_engine.cpp) decides which rows go where.
#pragma once
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "core/scratch.hpp"
#include "groupby/cpu_output.hpp"
#include "tandem/core/error.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table.hpp"

namespace tandem::cpu_groupby {

// count()'s element type: it reads no column.
struct NoInput {};

// An input column's rows in partition order: numbers as their bytes, strings as views into the
// input, and one byte per row for presence when the column has missing values.
struct ScatteredColumn {
  Scratch<std::byte> values;
  Scratch<std::uint8_t> present;  // empty: every row present
  explicit ScatteredColumn(const Column& c);
  // values[pos[j]] = row begin + j of the column, for rows [begin, end).
  void scatter(const Column& c, const std::uint32_t* pos, std::size_t begin, std::size_t end);
};

class Aggregator {
 public:
  Aggregator(Aggregation spec, const Column* input);
  virtual ~Aggregator() = default;
  virtual bool holistic() const = 0;
  const Aggregation& spec() const { return spec_; }
  const Column* input() const { return input_; }
  // Reads the same-typed column of another chunk from now on (the group-by sink's running groups).
  void read_from(const Column* input) { input_ = input; }
  // The output column(s) of the given groups, in that order. present[g]: how many of group g's
  // input values were present (what decomposable operators finalise with).
  virtual std::vector<Column> finish(std::span<const std::uint32_t> groups, const std::int64_t* present,
                                     int threads) const = 0;

 protected:
  Aggregation spec_;
  const Column* input_;
  std::vector<std::string> names_;
};

class DecomposableAggregator : public Aggregator {
 public:
  using Aggregator::Aggregator;
  bool holistic() const final { return false; }
  virtual std::size_t state_bytes() const = 0;
  // `slots` arrays of `groups` states, each at the identity.
  virtual void allocate(std::size_t slots, std::size_t groups) = 0;
  // Folds input rows [begin, end) into slot `slot`, row begin + j into group gid[j].
  virtual void update(std::size_t slot, const std::uint32_t* gid, std::size_t begin, std::size_t end) = 0;
  // Folds positions [begin, end) of the scattered input (null for count()) into slot 0,
  // position begin + j into group gid[j].
  virtual void update_scattered(const ScatteredColumn* in, const std::uint32_t* gid, std::size_t begin,
                                std::size_t end) = 0;
  // Merges slots 1, 2, … in that order into slot 0 for groups [g0, g1).
  virtual void merge_slots(std::size_t g0, std::size_t g1) = 0;

  // States kept outside, in records that hold several aggregations' states side by side (the
  // group-by sink's running groups: one cache miss a row for all of them, not one each): group
  // g's state at base + g * stride, base and stride multiples of state_align().
  virtual std::size_t state_align() const = 0;
  virtual void identity_at(std::byte* base, std::size_t stride, std::size_t g0, std::size_t g1) const = 0;
  virtual void update_at(std::byte* base, std::size_t stride, const std::uint32_t* gid, std::size_t begin,
                         std::size_t end) const = 0;
  // Merges the states of groups from[j] at `other` into groups to[j] here, j < n (records of the
  // same operator and input type).
  virtual void merge_at(std::byte* base, std::size_t stride, const std::byte* other, std::size_t other_stride,
                        const std::uint32_t* from, const std::uint32_t* to, std::size_t n) const = 0;
  virtual std::vector<Column> finish_at(const std::byte* base, std::size_t stride,
                                        std::span<const std::uint32_t> groups, const std::int64_t* present,
                                        int threads) const = 0;
  // Slot 0's states when they are counts (count() and count(col)), else null.
  virtual const std::int64_t* counts() const = 0;
};

class HolisticAggregator : public Aggregator {
 public:
  using Aggregator::Aggregator;
  bool holistic() const final { return true; }
  virtual void allocate(std::size_t groups) = 0;
  // Computes groups [g0, g1) from positions [begin, end) of the scattered input, whose group ids
  // gid[0, end - begin) all lie in that range.
  virtual void compute(const ScatteredColumn& in, const std::uint32_t* gid, std::size_t begin, std::size_t end,
                       std::uint32_t g0, std::uint32_t g1) = 0;
};

// ---------------------------------------------------------------------------------------------
// Reading an input's values and presence, from the column or from its scattered copy.

template <class T>
struct ColumnValues {
  const Column* c;
  T operator()(std::size_t i) const {
    if constexpr (std::is_same_v<T, std::string_view>) return c->string(i);
    else if constexpr (std::is_same_v<T, NoInput>) return {};
    else return reinterpret_cast<const T*>(c->values.data())[i];
  }
};

template <class T>
struct ScatteredValues {
  const T* v;
  T operator()(std::size_t i) const {
    if constexpr (std::is_same_v<T, NoInput>) return {};
    else return v[i];
  }
};

struct AllPresent {
  bool operator()(std::size_t) const { return true; }
};
struct BitPresent {
  const std::uint8_t* bits;
  bool operator()(std::size_t i) const { return (bits[i >> 3] >> (i & 7)) & 1u; }
};
struct BytePresent {
  const std::uint8_t* bytes;
  bool operator()(std::size_t i) const { return bytes[i] != 0; }
};

// Calls f(values, present) with the accessors of a column's rows.
template <class T, class F>
decltype(auto) with_rows(const Column* c, F&& f) {
  if (c == nullptr || c->validity.empty()) return f(ColumnValues<T>{c}, AllPresent{});
  return f(ColumnValues<T>{c}, BitPresent{reinterpret_cast<const std::uint8_t*>(c->validity.data())});
}

template <class T, class F>
decltype(auto) with_scattered(const ScatteredColumn* s, F&& f) {
  if (s == nullptr) return f(ScatteredValues<T>{nullptr}, AllPresent{});
  const ScatteredValues<T> v{reinterpret_cast<const T*>(s->values.data())};
  if (s->present.empty()) return f(v, AllPresent{});
  return f(v, BytePresent{s->present.data()});
}

// ---------------------------------------------------------------------------------------------
// The aggregators of one operator over one input type.

// Group g's state at base + g * stride (records of several aggregations' states).
template <class State, class Byte>
struct StridedStates {
  Byte* base;
  std::size_t stride;
  auto& operator[](std::size_t g) const {
    using S = std::conditional_t<std::is_const_v<Byte>, const State, State>;
    return *std::launder(reinterpret_cast<S*>(base + g * stride));
  }
};

template <class Op, class States, class Get, class Present>
void fold_rows(States st, const std::uint32_t* gid, std::size_t begin, std::size_t end, Get get, Present present) {
  for (std::size_t i = begin; i < end; ++i)
    if (present(i)) Op::update(st[gid[i - begin]], get(i));
}

template <class Op, class T>
class Decomposable final : public DecomposableAggregator {
 public:
  using State = typename Op::State;
  using DecomposableAggregator::DecomposableAggregator;

  std::size_t state_bytes() const override { return sizeof(State); }
  void allocate(std::size_t slots, std::size_t groups) override {
    slots_ = slots;
    // Slots that threads fill side by side sit at least 128 bytes apart: sharing a cache line
    // (two of 100 groups) made every thread's rows of those groups wait for another core.
    stride_ = slots > 1 ? groups + (128 + sizeof(State) - 1) / sizeof(State) : groups;
    states_.assign(slots * stride_, Op::identity());
  }
  void update(std::size_t slot, const std::uint32_t* gid, std::size_t begin, std::size_t end) override {
    State* st = states_.data() + slot * stride_;
    with_rows<T>(input_, [&](auto get, auto present) { fold_rows<Op>(st, gid, begin, end, get, present); });
  }
  void update_scattered(const ScatteredColumn* in, const std::uint32_t* gid, std::size_t begin,
                        std::size_t end) override {
    with_scattered<T>(in,
                      [&](auto get, auto present) { fold_rows<Op>(states_.data(), gid, begin, end, get, present); });
  }
  void merge_slots(std::size_t g0, std::size_t g1) override {
    for (std::size_t s = 1; s < slots_; ++s) {
      const State* from = states_.data() + s * stride_;
      for (std::size_t g = g0; g < g1; ++g) Op::merge(states_[g], from[g]);
    }
  }
  std::vector<Column> finish(std::span<const std::uint32_t> groups, const std::int64_t* present,
                             int threads) const override {
    return finish_from(states_.data(), groups, present, threads);
  }
  const std::int64_t* counts() const override {
    if constexpr (std::is_same_v<State, std::int64_t>) return states_.data();
    else return nullptr;
  }

  std::size_t state_align() const override { return alignof(State); }
  void identity_at(std::byte* base, std::size_t stride, std::size_t g0, std::size_t g1) const override {
    for (std::size_t g = g0; g < g1; ++g) ::new (static_cast<void*>(base + g * stride)) State(Op::identity());
  }
  void update_at(std::byte* base, std::size_t stride, const std::uint32_t* gid, std::size_t begin,
                 std::size_t end) const override {
    const StridedStates<State, std::byte> st{base, stride};
    with_rows<T>(input_, [&](auto get, auto present) { fold_rows<Op>(st, gid, begin, end, get, present); });
  }
  void merge_at(std::byte* base, std::size_t stride, const std::byte* other, std::size_t other_stride,
                const std::uint32_t* from, const std::uint32_t* to, std::size_t n) const override {
    const StridedStates<State, std::byte> mine{base, stride};
    const StridedStates<State, const std::byte> theirs{other, other_stride};
    for (std::size_t j = 0; j < n; ++j) Op::merge(mine[to[j]], theirs[from[j]]);
  }
  std::vector<Column> finish_at(const std::byte* base, std::size_t stride, std::span<const std::uint32_t> groups,
                                const std::int64_t* present, int threads) const override {
    return finish_from(StridedStates<State, const std::byte>{base, stride}, groups, present, threads);
  }

 private:
  template <class States>
  std::vector<Column> finish_from(States st, std::span<const std::uint32_t> groups, const std::int64_t* present,
                                  int threads) const {
    if constexpr (requires(const State& s) { Op::overflowed(s); })
      for (const auto g : groups)
        if (Op::overflowed(st[g]))
          throw InputError(fmt::format("{}: the sum of column '{}' does not fit {} in at least one group",
                                       names_.front(), spec_.column, to_string(column_type_v<typename Op::Out>)));
    std::vector<Column> out;
    out.push_back(build_column<typename Op::Out>(names_.front(), groups.size(), threads, [&](std::size_t i) {
      return Op::finalise(st[groups[i]], present[groups[i]]);
    }));
    return out;
  }
  Scratch<State> states_;
  std::size_t slots_{0}, stride_{0};
};

template <class Op, class T>
class Holistic final : public HolisticAggregator {
 public:
  using Out = typename Op::Out;
  Holistic(Aggregation spec, const Column* input)
      : HolisticAggregator(std::move(spec), input), outputs_(Op::outputs(spec_)) {}

  void allocate(std::size_t groups) override {
    results_.assign(groups * outputs_, Out{});
    has_.assign(groups * outputs_, 0);
  }
  void compute(const ScatteredColumn& in, const std::uint32_t* gid, std::size_t begin, std::size_t end,
               std::uint32_t g0, std::uint32_t g1) override {
    with_scattered<T>(&in, [&](auto get, auto present) {
      std::vector<std::size_t> start(g1 - g0 + 1, 0);
      for (std::size_t j = begin; j < end; ++j) start[gid[j - begin] - g0 + 1] += present(j);
      for (std::size_t g = 1; g < start.size(); ++g) start[g] += start[g - 1];
      Scratch<T> values(start.back());  // every value written below: no zeroing pass
      std::vector<std::size_t> next(start.begin(), start.end() - 1);
      for (std::size_t j = begin; j < end; ++j)
        if (present(j)) values[next[gid[j - begin] - g0]++] = get(j);
      std::vector<std::optional<Out>> out(outputs_);
      for (std::uint32_t g = g0; g < g1; ++g) {
        const std::span<T> group(values.data() + start[g - g0], start[g - g0 + 1] - start[g - g0]);
        Op::compute(group, spec_, out.data());
        store(g, out);
      }
      return 0;
    });
  }
  std::vector<Column> finish(std::span<const std::uint32_t> groups, const std::int64_t*, int threads) const override {
    std::vector<Column> cols;
    for (std::size_t k = 0; k < outputs_; ++k)
      cols.push_back(build_column<Out>(names_[k], groups.size(), threads, [&, k](std::size_t i) {
        const std::size_t at = groups[i] * outputs_ + k;
        return has_[at] ? std::optional<Out>(results_[at]) : std::nullopt;
      }));
    return cols;
  }

 private:
  void store(std::uint32_t g, const std::vector<std::optional<Out>>& out) {
    for (std::size_t k = 0; k < outputs_; ++k) {
      const std::size_t at = std::size_t{g} * outputs_ + k;
      has_[at] = out[k].has_value();
      if (out[k]) results_[at] = *out[k];
    }
  }
  std::size_t outputs_;
  std::vector<Out> results_;
  std::vector<std::uint8_t> has_;
};

}  // namespace tandem::cpu_groupby
