// The GPU tests' way to run one group-by engine with its settings on raw key and value arrays:
// the hash engine (src/groupby/hash/) or the chained MapReduce engine running GroupByJob on the
// GPU, or the CPU MapReduce engine as their reference. Groups come sorted by key, with what the
// engine did (EngineStats) and its report; int64 sums as the engines leave them (modulo 2^64).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"
#include "tandem/mapreduce.hpp"

namespace engine_test {

// The MapReduce engines' options and which GPU engine runs: the group-by's hash engine (auto_,
// hash) or the chained MapReduce engine (chained).
struct Options : tandem::mapreduce::Options {
  enum class Mode { auto_, chained, hash };
  Mode mode{Mode::auto_};
};

struct GroupRow {
  std::uint64_t key_bits{0};  // the key's bit pattern widened to 64 bits
  std::uint64_t count{0};
  double dsum{0}, dmin{0}, dmax{0};
  std::int64_t isum{0}, imin{0}, imax{0};
};

struct GroupBy {
  std::vector<GroupRow> rows;  // sorted by key (numeric order of the key type)
  tandem::mapreduce::EngineStats gpu;
  tandem::Report report;
};

// Keys of u32, u64, i32 or i64; values (has_values) of f32, f64, i32 or i64, widened to f64 or
// i64 as the engines take them. o.device: cpu (the CPU MapReduce engine) or gpu / auto (the GPU,
// o.mode: hash or auto for the hash engine, chained for the chained one). Throws
// tandem::InputError when value_count differs from n.
GroupBy groupby(tandem::DType key_type, const void* keys, std::size_t n, tandem::DType value_type, const void* values,
                std::size_t value_count, bool has_values, const Options& o = {});

}  // namespace engine_test
