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

}  // namespace tandem::groupby_engine
