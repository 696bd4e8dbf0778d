#include "groupby/cpu_plan.hpp"

#include <algorithm>
#include <bit>

#include <fmt/format.h>

namespace tandem::cpu_groupby {
namespace {
constexpr std::size_t kCacheStates = std::size_t{256} << 10;  // bytes of states a core keeps close
constexpr std::size_t kSlotStates = std::size_t{4} << 20;     // one slot's states at most (the shared cache)
constexpr std::size_t kAllSlots = std::size_t{64} << 20;      // all slots' states at most
constexpr std::size_t kMinSlotRows = std::size_t{1} << 16;
constexpr std::size_t kMaxSlots = 64;
constexpr std::size_t kMaxPartitions = 4096;
}  // namespace

std::uint64_t most_slot_groups(std::size_t state_bytes, bool holistic) {
  return holistic ? 0 : kSlotStates / std::max<std::size_t>(state_bytes, 1);
}

AggregationPlan plan_aggregation(std::size_t rows, std::uint64_t groups, std::size_t state_bytes, bool holistic,
                                 int threads) {
  AggregationPlan p;
  const std::uint64_t bytes = groups * std::max<std::size_t>(state_bytes, 1);
  if (groups <= most_slot_groups(state_bytes, holistic)) {
    const std::size_t most = std::clamp<std::size_t>(kAllSlots / std::max<std::uint64_t>(bytes, 1), 4, kMaxSlots);
    p.slot_rows = std::max(kMinSlotRows, (rows + most - 1) / most);
    p.slots = std::max<std::size_t>(1, (rows + p.slot_rows - 1) / p.slot_rows);
    return p;
  }
  p.partitioned = true;
  const std::uint64_t want = std::max<std::uint64_t>(4 * static_cast<std::uint64_t>(std::max(threads, 1)),
                                                     (bytes + kCacheStates - 1) / kCacheStates);
  const std::uint64_t per = std::max<std::uint64_t>(
      1, (groups + std::min<std::uint64_t>(want, kMaxPartitions) - 1) / std::min<std::uint64_t>(want, kMaxPartitions));
  p.partition_shift = static_cast<unsigned>(std::bit_width(per - 1));
  p.partitions = std::max<std::size_t>(
      1, static_cast<std::size_t>((groups + (std::uint64_t{1} << p.partition_shift) - 1) >> p.partition_shift));
  return p;
}

std::string AggregationPlan::describe() const {
  if (!partitioned)
    return fmt::format("{} row range(s) of {} rows with partial states, merged in row order", slots, slot_rows);
  return fmt::format("{} partition(s) of {} group ids, rows scattered in row order", partitions,
                     std::uint64_t{1} << partition_shift);
}

}  // namespace tandem::cpu_groupby
