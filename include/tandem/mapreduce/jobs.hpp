// What a MapReduce job is, and the shipped jobs written as such: group-by (GroupByJob, with its
// accumulators Agg) and word count (WordCountCpuJob).
//
// A job is a type with
//   key_type, value_type
//   template <class Emit> void map(std::size_t record, Emit&& emit) const;   // emit(key, value), 0..n times
//   void reduce(value_type& into, const value_type& v) const;                // associative, commutative
// Records are numbered 0..M-1; the job reads its own data for record i (a chunk of text, a row).
// The CPU engine (cpu_mapreduce, tandem/mapreduce/cpu_engine.hpp) runs any such job; the GPU engine
// (tandem/mapreduce/gpu_engine.cuh, for .cu files) runs jobs whose map/reduce are __host__ __device__
// and whose keys are fixed-width.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "tandem/core/agg_order.hpp"
#include "tandem/cuda/hd.hpp"
#include "tandem/mapreduce/words.hpp"

namespace tandem::mapreduce {

// Group-by accumulators. A is double (float inputs) or int64 (integer inputs). min/max use a total
// order on -0.0 < +0.0 and ignore NaN (NaN only if every value was NaN: tandem/core/agg_order.hpp);
// sum propagates NaN.
template <class A>
struct Agg {
  A sum;
  A min;
  A max;
  std::uint64_t count;
};

template <class A, class V>
TANDEM_HD Agg<A> agg_of(V v) {
  const A a = static_cast<A>(v);
  return Agg<A>{a, a, a, 1};
}
template <class A>
TANDEM_HD void agg_reduce(Agg<A>& into, const Agg<A>& v) {
  if constexpr (std::is_integral_v<A>)  // wraps modulo 2^64: exact whenever the sum fits i64
    into.sum =
        static_cast<A>(static_cast<std::make_unsigned_t<A>>(into.sum) + static_cast<std::make_unsigned_t<A>>(v.sum));
  else into.sum += v.sum;
  if (agg_less(v.min, into.min)) into.min = v.min;
  if (agg_greater(v.max, into.max)) into.max = v.max;
  into.count += v.count;
}

template <class V>
using agg_acc_t = std::conditional_t<std::is_floating_point_v<V>, double, std::int64_t>;

// Group-by job: keys[i] with values[i] (V = void: counts only).
template <class K, class V>
struct GroupByJob {
  using key_type = K;
  using value_type = std::conditional_t<std::is_void_v<V>, std::uint64_t,
                                        Agg<agg_acc_t<std::conditional_t<std::is_void_v<V>, int, V>>>>;
  // Float sums depend on the order of addition: the CPU engine keeps it fixed (see cpu_mapreduce).
  static constexpr bool fixed_order = std::is_floating_point_v<std::conditional_t<std::is_void_v<V>, int, V>>;
  const K* keys{nullptr};
  const std::conditional_t<std::is_void_v<V>, char, V>* values{nullptr};

  template <class Emit>
  TANDEM_HD void map(std::size_t i, Emit&& emit) const {
    if constexpr (std::is_void_v<V>) {
      emit(keys[i], value_type{1});
    } else {
      emit(keys[i], agg_of<agg_acc_t<V>>(values[i]));
    }
  }
  TANDEM_HD void reduce(value_type& into, const value_type& v) const {
    if constexpr (std::is_void_v<V>) {
      into += v;
    } else {
      agg_reduce(into, v);
    }
  }
  // The value that changes nothing when reduced (GPU engine: preloaded hot keys). NaN is the
  // identity of min/max in agg_less's order, -0.0 that of a float sum.
  TANDEM_HD value_type identity() const {
    if constexpr (std::is_void_v<V>) {
      return 0;
    } else if constexpr (std::is_floating_point_v<V>) {
      return value_type{-0.0, __builtin_nan(""), __builtin_nan(""), 0};
    } else {
      return value_type{0, INT64_MAX, INT64_MIN, 0};
    }
  }
};

// Word count as a generic job (cpu_mapreduce; wordcount() itself uses its own CPU engine): keys are views into
// the text (any length).
struct WordCountCpuJob {
  using key_type = std::string_view;
  using value_type = std::uint64_t;
  const char* text{nullptr};
  std::size_t size{0};
  std::size_t chunk{1 << 16};

  std::size_t records() const { return (size + chunk - 1) / chunk; }
  template <class Emit>
  void map(std::size_t i, Emit&& emit) const {
    const std::size_t first = i * chunk, last = std::min(size, first + chunk);
    for_each_word(text, size, first, last,
                  [&](std::size_t b, std::size_t len) { emit(std::string_view(text + b, len), value_type{1}); });
  }
  void reduce(value_type& into, const value_type& v) const { into += v; }
};

}  // namespace tandem::mapreduce
