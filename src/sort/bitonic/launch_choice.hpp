// Internal: the bitonic GPU launch shape from measured numbers, pure code (tested on the CPU).
//
// Block size (threads per block) is bounded by registers: with j registers per block and i per
// thread, N <= floor(log2(j / i)), candidates 2^N for 1 <= N <= min(that, floor(log2(max threads
// per block))). Vector length (elements per thread) chosen by hardware counters: the candidate
// with the largest ratio of arithmetic-unit utilisation to the share of SM cycles lost to
// shared-memory bank conflicts (counter_ratio below).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tandem::bitonic::detail {

// floor(log2(regs_per_block / regs_per_thread)); 0 when a thread needs more than the block has.
// A kernel reported with 0 registers per thread counts as 1. UsageError naming the field for
// regs_per_block <= 0 or regs_per_thread < 0.
int register_bound_log2(int regs_per_block, int regs_per_thread);

// {2^N : 1 <= N <= min(register_bound_log2(j, i), floor(log2(max_threads_per_block)))}, ascending;
// empty when the bound is 0. UsageError for max_threads_per_block <= 0.
std::vector<int> block_candidates(int regs_per_block, int regs_per_thread, int max_threads_per_block);

// What limits a launch besides registers.
struct LaunchLimits {
  std::size_t shared_bytes_per_block{0};  // opt-in maximum of dynamic shared memory
  std::size_t word_bytes{4};              // bytes per element
  std::uint64_t elements{0};              // a tile must not exceed the data
  int min_block{1};                       // smallest block worth launching
};

// Shared memory of one tile of `tile` elements (padded by one word per 32 against bank conflicts).
std::size_t tile_shared_bytes(std::uint64_t tile, std::size_t word_bytes);

// The register-bounded candidates for `elems` elements per thread whose tile fits in shared memory
// and in the data, and that are at least limits.min_block threads.
std::vector<int> feasible_blocks(const std::vector<int>& register_bounded, int elems, const LaunchLimits& limits);

// Counters of one candidate's run (read over the whole run).
struct CounterSample {
  double alu_utilisation_pct{0};  // ALU pipe active cycles, % of peak sustained (0..100)
  double bank_conflicts{0};       // shared-memory bank conflicts (extra cycles), all SMs
  double sm_cycles{0};            // elapsed cycles, average per SM
  int sm_count{1};
};

// Share of the SMs' elapsed cycles spent on shared-memory bank conflicts:
// bank_conflicts / (sm_cycles * sm_count); NaN when the cycles are not positive.
double conflict_share(const CounterSample& s);

// alu_utilisation_pct / 100 / conflict_share: utilisation per unit of bank-conflict cost. +inf when
// there were no conflicts (and the ALU was busy); NaN when the sample is unusable (no ALU activity,
// no cycles, or a NaN reading).
double counter_ratio(const CounterSample& s);

// Index of the sample with the largest counter_ratio. Ties (several without conflicts, or equal
// ratios) go to the larger utilisation, then to the earlier sample; NaN samples are skipped;
// nullopt when none is usable.
std::optional<std::size_t> pick_by_counters(const std::vector<CounterSample>& samples);

}  // namespace tandem::bitonic::detail
