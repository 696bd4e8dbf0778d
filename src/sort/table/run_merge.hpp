// The merge of sorted runs (run_file.hpp): a tournament (loser) tree of the runs' current rows,
// compared as tandem::sort orders them (strings by their bytes, -0.0 equal to 0.0, NaN after
// every number, missing values last unless nulls = first, descending keys reversed) by their
// normalised keys: each block read back is encoded with one layout joined over every run's table
// (key_layout.hpp), so rows compare a word at a time, and by their values only where string
// prefixes tie. Equal rows come from the earlier run first, so the merge is stable when runs are
// consecutive pieces of the input. Each run is read a block at a time; rows leave in batches.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "key_layout.hpp"
#include "run_file.hpp"
#include "tandem/table.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::detail {

class RowComparator {
 public:
  // `layout`: the key layout joined over every run's table (join_layout).
  explicit RowComparator(KeyLayout layout) : layout_(std::move(layout)) {}
  const KeyLayout& layout() const { return layout_; }
  // The normalised keys of every row of a block.
  KeyWords encode(const Table& block) const;
  // Negative, 0, positive as row i of a (keys ka) sorts before, with, after row j of b (keys kb).
  int compare(const Table& a, const KeyWords& ka, std::size_t i, const Table& b, const KeyWords& kb,
              std::size_t j) const {
    const int c = compare_key_bytes(ka, i, kb, j, layout_.exact_bytes);
    return c != 0 || layout_.first_tie_break < 0 ? c : compare_values(a, i, b, j);
  }

 private:
  // The fields from the first tie-break on, by their values.
  int compare_values(const Table& a, std::size_t i, const Table& b, std::size_t j) const;
  KeyLayout layout_;
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
                       const std::function<void(Table&&)>& emit);

}  // namespace tandem::detail
