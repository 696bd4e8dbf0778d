// The one table of aggregation operators: for each AggOp, the input types it accepts, its
// output type, whether it is holistic (computed per group from the group's gathered values) and
// how the CPU engine runs it. Adding an operator: its file in this folder, its test, one row in
// registry.cpp (and its AggOp value).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tandem/groupby.hpp"
#include "tandem/table.hpp"

namespace tandem::cpu_groupby {
class Aggregator;
}

namespace tandem::agg {

enum class Param : std::uint8_t { none, q, n };  // quantile's q, top's n

struct OpInfo {
  AggOp op;
  std::string_view name;  // as written: "sum" in sum(v1)
  bool holistic;
  bool reads_column;  // false only for count()
  Param param;
  bool (*accepts)(ColumnType input);
  ColumnType (*output_type)(ColumnType input);  // the input is ignored by count()
  std::unique_ptr<cpu_groupby::Aggregator> (*make_cpu)(const Aggregation& a, const Column* input);
};

std::span<const OpInfo> operators();
const OpInfo& operator_info(AggOp op);

// "sum(v1)", "count()", "quantile(v3, 0.9)", "top(v3, 2)": for reports and messages.
std::string describe(const Aggregation& a);

// UsageError naming the aggregation when its column is absent or of a type it does not accept.
void check_applies(const Aggregation& a, const Table& input);

}  // namespace tandem::agg
