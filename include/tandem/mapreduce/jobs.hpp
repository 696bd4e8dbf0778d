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

#include "tandem/cuda/hd.hpp"
#include "tandem/groupby/accumulators.hpp"
#include "tandem/mapreduce/words.hpp"

namespace tandem::mapreduce {

// Group-by accumulators (tandem/groupby/accumulators.hpp): the job reduces what the GPU hash
// engine of the group-by reduces.
using ::tandem::Agg;
using ::tandem::agg_acc_t;
using ::tandem::agg_of;
using ::tandem::agg_reduce;

// Group-by job: keys[i] with values[i] (V = void: counts only).
template <class K, class V>
struct GroupByJob {
  using key_type = K;
  using value_type = group_acc_t<V>;
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
  // The value that changes nothing when reduced (GPU engine: preloaded hot keys).
  TANDEM_HD value_type identity() const { return group_acc_identity<V>(); }
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
