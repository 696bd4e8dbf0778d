// The merge of sorted runs (run_file.hpp): a heap of the runs' current rows, compared by the
// sort spec's key values as tandem::sort orders them (strings by their bytes, -0.0 equal to 0.0,
// NaN after every number, missing values last unless nulls = first, descending keys reversed);
// equal rows come from the earlier run first, so the merge is stable when runs are consecutive
// pieces of the input. Each run is read a block at a time; rows leave in batches.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "key_layout.hpp"
#include "run_file.hpp"
#include "tandem/table.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::detail {

class RowComparator {
 public:
  // `like`: the columns and types of every table compared. UsageError naming an absent key.
  RowComparator(const Table& like, const SortSpec& spec, const TableSortOptions& options);
  // Negative, 0, positive as row i of a sorts before, with, after row j of b.
  int compare(const Table& a, std::size_t i, const Table& b, std::size_t j) const;

 private:
  KeyLayout layout_;  // its fields, compared by value (compare_field), as the in-memory sort's tie-break
};

// A row of one of several tables.
struct RowRef {
  std::uint32_t table;
  std::size_t row;
};

// The referenced rows, in that order, as one table with the columns of `like`.
Table gather_from_tables(std::span<const Table* const> tables, std::span<const RowRef> refs, const Table& like);

// Merges every run of `runs`, calling emit with batches of at most batch_rows rows in order;
// stops after `limit` rows when given. Returns the rows emitted.
std::size_t merge_runs(const RunFile& runs, const Table& like, const RowComparator& cmp,
                       std::optional<std::size_t> limit, std::size_t batch_rows,
                       const std::function<void(const Table&)>& emit);

}  // namespace tandem::detail
