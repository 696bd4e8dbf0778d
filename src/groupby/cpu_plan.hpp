// How the CPU engine spreads the aggregation over threads; pure arithmetic, tested on its own.
//
// Few groups (their states fit the shared cache): the rows are cut into fixed ranges (slots),
// each range folds into its own partial states, and the partials are merged in row order; the
// more states a group has, the fewer the slots. Many groups, or any holistic aggregation: the rows are scattered,
// keeping their order, into partitions of consecutive group ids sized so each partition's states fit the cache, and
// each partition is folded by one thread in row order. Neither depends on the thread count, so float sums, first and
// last come out the same on 1 or N threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::cpu_groupby {

struct AggregationPlan {
  bool partitioned{false};
  std::size_t slots{1};  // row ranges with partial states (not partitioned)
  std::size_t slot_rows{0};
  std::size_t partitions{1};    // group-id ranges (partitioned)
  unsigned partition_shift{0};  // group id >> shift = its partition
  std::string describe() const;
};

// The most group ids that fold in row ranges (slots) rather than partitions: 0 with a holistic
// aggregation, which always partitions.
std::uint64_t most_slot_groups(std::size_t state_bytes, bool holistic);

// state_bytes: all decomposable states of one group together.
AggregationPlan plan_aggregation(std::size_t rows, std::uint64_t groups, std::size_t state_bytes, bool holistic,
                                 int threads);

}  // namespace tandem::cpu_groupby
