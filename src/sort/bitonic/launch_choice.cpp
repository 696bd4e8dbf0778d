// The bitonic GPU launch shape from measured numbers (launch_choice.hpp).
#include "sort/bitonic/launch_choice.hpp"

#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem::bitonic::detail {

int register_bound_log2(int regs_per_block, int regs_per_thread) {
  if (regs_per_block <= 0) throw UsageError(fmt::format("regs_per_block = {} must be > 0", regs_per_block));
  if (regs_per_thread < 0) throw UsageError(fmt::format("regs_per_thread = {} must be >= 0", regs_per_thread));
  const unsigned threads = unsigned(regs_per_block) / unsigned(std::max(regs_per_thread, 1));
  return threads == 0 ? 0 : std::bit_width(threads) - 1;
}

std::vector<int> block_candidates(int regs_per_block, int regs_per_thread, int max_threads_per_block) {
  if (max_threads_per_block <= 0)
    throw UsageError(fmt::format("max_threads_per_block = {} must be > 0", max_threads_per_block));
  const int top = std::min(register_bound_log2(regs_per_block, regs_per_thread),
                           int(std::bit_width(unsigned(max_threads_per_block))) - 1);
  std::vector<int> out;
  for (int n = 1; n <= top; ++n) out.push_back(1 << n);
  return out;
}

std::size_t tile_shared_bytes(std::uint64_t tile, std::size_t word_bytes) {
  return std::size_t(tile + tile / 32 + 1) * word_bytes;
}

std::vector<int> feasible_blocks(const std::vector<int>& register_bounded, int elems, const LaunchLimits& limits) {
  std::vector<int> out;
  for (int b : register_bounded) {
    const std::uint64_t tile = std::uint64_t(b) * std::uint64_t(elems);
    if (b < limits.min_block || tile > limits.elements) continue;
    if (tile_shared_bytes(tile, limits.word_bytes) > limits.shared_bytes_per_block) continue;
    out.push_back(b);
  }
  return out;
}

double conflict_share(const CounterSample& s) {
  const double cycles = s.sm_cycles * double(s.sm_count);
  if (!(cycles > 0)) return std::numeric_limits<double>::quiet_NaN();
  return s.bank_conflicts / cycles;
}

double counter_ratio(const CounterSample& s) {
  const double share = conflict_share(s);
  if (std::isnan(share) || !(s.alu_utilisation_pct > 0) || !(share >= 0))
    return std::numeric_limits<double>::quiet_NaN();
  if (share == 0) return std::numeric_limits<double>::infinity();
  return s.alu_utilisation_pct / 100.0 / share;
}

std::optional<std::size_t> pick_by_counters(const std::vector<CounterSample>& samples) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double r = counter_ratio(samples[i]);
    if (std::isnan(r)) continue;
    if (!best) {
      best = i;
      continue;
    }
    const double b = counter_ratio(samples[*best]);
    if (r > b || (r == b && samples[i].alu_utilisation_pct > samples[*best].alu_utilisation_pct)) best = i;
  }
  return best;
}

}  // namespace tandem::bitonic::detail
