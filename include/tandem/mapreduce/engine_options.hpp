// The MapReduce engines' options (tuned or default when zero) and what the GPU engine did (EngineStats).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"
#include "tandem/groupby/gpu_hash_options.hpp"

namespace tandem::mapreduce {

// Options shared by the engines. Zero / negative means "tuned or default". The GPU settings of
// the hash group-by (GpuHashOptions) apply to the chained engine where they share a meaning:
// blocks, block_threads, sample_fraction, hot_fraction, hot_keys, shared_entries (sm_pool entries
// a block), spill_entries (the global spill list), result_entries (the initial result pool).
struct Options : GpuHashOptions {
  Device device{Device::auto_};
  int threads{0};                  // CPU threads (0: default_threads())
  std::size_t cpu_table_limit{0};  // cpu_mapreduce: entries per thread-local table before it spills (0: none)
  // Chained engine, global tier: per-block global tables, or cold keys straight into the global
  // result table ("direct"). auto_: the tuner measures both on the first job of a problem class
  // and caches the winner (TuningCache, op "mapreduce.tables"); without tuning, direct.
  enum class Tables { auto_, block, direct };
  Tables tables{Tables::auto_};
  std::size_t block_pool_entries{0};  // gm_pool entries per block (0: from the sampling estimate)
};

// What the GPU engine did (tandem/groupby/gpu_hash_options.hpp), for --explain and the tests.
using EngineStats = ::tandem::GpuEngineStats;
using ::tandem::explain_stats;

}  // namespace tandem::mapreduce
