// The group-by sink's spilled partitions, by key range: tables appended range by range to spill
// files (range p's partial groups to file 2p, its kept rows to file 2p + 1), and finish() over
// them one range at a time in key order, each range's groups handed on as soon as they are made.
// A range whose files hold more than the budget is split again by splitters sampled from its own
// rows (a single key, which no splitter divides, is combined whole), so that skewed keys do not
// bring a range's groups into memory all at once.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "groupby/sink/chunk_partials.hpp"
#include "groupby/sink/key_ranges.hpp"
#include "groupby/sink/spill_files.hpp"

namespace tandem::sink {

// Appends t's rows (keys first) to `files`, row i to file 2·(row i's range) + which, tagged
// `chunk`; the rows of a range keep their order.
void append_by_range(SpillFiles& files, const Table& t, const KeyRanges& ranges, std::uint64_t chunk,
                     std::size_t which);

struct RangeFinish {
  const SinkPlan& plan;
  const Table& partial_like;  // the shapes of the spilled tables
  const Table& kept_like;
  std::string temp_parent;  // where a split range's files go
  std::size_t budget;       // the most bytes of spilled files a range is combined from at once
  int threads;
  std::function<void(Table)> emit;  // each range's groups, in key order
  bool mostly_distinct{false};      // the partial groups are mostly a row each (combine_partials)
  // For the report.
  std::size_t ranges_combined{0}, ranges_split{0}, single_key_over_budget{0};
  std::uint64_t largest{0}, rewritten{0};
  bool by_partition{false};  // some range's partial groups were folded partition by partition
};

// Hands cached scratch blocks (when they pass `keep` bytes) and free heap pages back to the system.
void give_back_memory(std::size_t keep);

// Combines the ranges [0, parts) of `files` in order (their files removed as they are read).
void finish_ranges(SpillFiles& files, std::size_t parts, RangeFinish& how, int depth = 0);

}  // namespace tandem::sink
