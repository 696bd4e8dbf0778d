// Which GPU engine groups a device table (GroupByOptions::gpu_engine): the hash engine
// (src/groupby/hash/) where the keys and aggregations allow it, else the table engine
// (src/groupby/gpu/). Pure: decided from the schema and the columns' missing counts.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "tandem/groupby.hpp"
#include "tandem/table.hpp"

namespace tandem::groupby_engine {

struct HashFit {
  bool fits{false};
  std::string why;           // for the report: why the hash engine runs, or why not
  std::string value_column;  // the one column the aggregations read (empty: counts of rows only)
};

// schema: the table's columns (no rows needed); missing(name): that column's missing values.
HashFit hash_engine_fit(const Table& schema, std::size_t rows, const GroupBySpec& spec,
                        const std::function<std::size_t(const std::string&)>& missing);

// Whether auto takes the hash engine where it applies: for counts only. Measured on an H100 at
// 10^8 rows (docs/BENCHMARKS.md), counts ran 3.1-3.5x faster on it than on the table engine; with
// a value column it was 1.46-1.56x faster over 10^6 groups but 0.83-0.95x over 100 (its
// dense-range path keeps min and max too), and the key range is not known before a pass over
// the keys. Empty when auto takes it, else why not.
std::string auto_declines_hash(const HashFit& fit);

}  // namespace tandem::groupby_engine
