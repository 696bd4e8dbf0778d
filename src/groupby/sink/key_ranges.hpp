// Key ranges for the group-by sink's spill. Splitters are sampled from the partial groups at
// hand, in the group-by's key order (cpu_keys.hpp): each key column ascending, numbers by value
// with -0.0 equal to +0.0 and every NaN one key after all numbers, strings by bytes, a missing key
// after all others. Range p holds the keys k with splitter[p-1] < k <= splitter[p], so ranges
// combined one after another give the result in key order, with no sort over the whole result.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "tandem/table.hpp"

namespace tandem::sink {

// Row i of a against row j of b on their first `keys` columns (the same types in both), in the
// group-by's key order: negative, 0 (keys that group together) or positive.
int compare_keys(const Table& a, std::size_t i, const Table& b, std::size_t j, std::size_t keys);

// The first `keys` columns of t's rows at `rows`, in that order.
Table gather_keys(const Table& t, std::size_t keys, const std::vector<std::size_t>& rows);

class KeyRanges {
 public:
  KeyRanges() = default;  // one range, every key
  // At most `parts` ranges from the distinct quantiles of a sample of the tables' rows (at most
  // sample_rows, spread evenly over the tables' rows); fewer when the sample holds fewer distinct
  // keys (one, for a single key: such a range cannot be split).
  static KeyRanges sample(const std::vector<const Table*>& tables, std::size_t keys, std::size_t parts,
                          std::size_t sample_rows);
  std::size_t parts() const { return splitters_.rows() + 1; }
  // The range of each of t's rows (t's first columns are the keys).
  std::vector<std::uint32_t> assign(const Table& t) const;

 private:
  Table splitters_;  // key columns only, rows ascending and distinct
  std::size_t keys_{0};
};

}  // namespace tandem::sink
