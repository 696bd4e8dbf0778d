// The group-by entry over raw key and value arrays (CPU or GPU by device dispatch): aggregations, rows, CSV.
// Device dispatch (Options::device): auto runs on the GPU when one is present and the input is large enough.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"
#include "tandem/mapreduce/engine_options.hpp"

namespace tandem::mapreduce {

enum class AggKind { sum, count, min, max, mean };
std::vector<AggKind> parse_aggs(std::string_view list);  // "sum,count" ; UsageError on bad names
std::string_view to_string(AggKind a);

// One group: the key (as its bit pattern widened to 64 bits, see key_type) and the accumulators.
// Integer values accumulate in int64 (isum/imin/imax), float values in double (dsum/dmin/dmax).
struct GroupRow {
  std::uint64_t key_bits{0};
  std::uint64_t count{0};
  double dsum{0}, dmin{0}, dmax{0};
  std::int64_t isum{0}, imin{0}, imax{0};
};

struct GroupBy {
  DType key_type{DType::u32};
  DType value_type{DType::f64};
  bool has_values{false};
  std::vector<GroupRow> rows;  // sorted by key (numeric order of key_type)
  EngineStats gpu;
  Report report;
};

// keys/values are raw arrays of key_type / value_type (values may be empty when only counts are
// wanted: pass value_count 0 and has_values false). Throws InputError when the lengths differ.
GroupBy groupby(DType key_type, const void* keys, std::size_t n, DType value_type, const void* values,
                std::size_t value_count, bool has_values, const Options& opts = {});

// CSV as the CLI writes it: header "key,<aggs...>", one row per key.
void write_groupby_csv(std::ostream& os, const GroupBy& g, const std::vector<AggKind>& aggs);

}  // namespace tandem::mapreduce
