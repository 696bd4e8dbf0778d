#include "groupby/engine_choice.hpp"

#include <fmt/format.h>

namespace tandem::groupby_engine {
namespace {

bool hash_operator(AggOp op) {
  return op == AggOp::count_rows || op == AggOp::count || op == AggOp::sum || op == AggOp::min || op == AggOp::max ||
         op == AggOp::mean;
}

HashFit no(std::string why) { return {false, std::move(why), {}}; }

}  // namespace

HashFit hash_engine_fit(const Table& schema, std::size_t rows, const GroupBySpec& spec,
                        const std::function<std::size_t(const std::string&)>& missing) {
  if (spec.by.size() != 1) return no(fmt::format("{} key columns (the hash engine takes one)", spec.by.size()));
  const std::string& key = spec.by.front();
  const ColumnType kt = schema.column(key).type;
  if (!is_integer(kt)) return no(fmt::format("key '{}' is {} (the hash engine takes integers)", key, to_string(kt)));
  if (rows >= (std::size_t{1} << 32) - 1) return no("2^32 rows or more");
  std::string value;
  for (const auto& a : spec.aggs) {
    if (!hash_operator(a.op))
      return no(fmt::format("{} (the hash engine runs count, sum, min, max and mean)", to_string(a.op)));
    if (a.op == AggOp::count_rows || (a.op == AggOp::count && a.column == key)) continue;
    if (!value.empty() && a.column != value)
      return no(fmt::format("aggregations of '{}' and '{}' (the hash engine reads one value column)", value, a.column));
    value = a.column;
  }
  if (!value.empty()) {
    const ColumnType vt = schema.column(value).type;
    if (vt != ColumnType::f64 && vt != ColumnType::i64)
      return no(fmt::format("value column '{}' is {} (the hash engine takes f64 and i64)", value, to_string(vt)));
  }
  if (missing(key) > 0) return no(fmt::format("key '{}' has missing values", key));
  if (!value.empty() && missing(value) > 0) return no(fmt::format("value column '{}' has missing values", value));
  return {true,
          value.empty() ? fmt::format("one integer key '{}', counts only", key)
                        : fmt::format("one integer key '{}', decomposable aggregations of '{}'", key, value),
          value};
}

std::string auto_declines_hash(const HashFit& fit) {
  if (!fit.fits) return fit.why;
  if (fit.value_column.empty()) return {};
  return fmt::format(
      "{}; auto takes the hash engine for counts only (with a value column it is slower than the table engine over "
      "a small key range; gpu_engine = hash runs it)",
      fit.why);
}

}  // namespace tandem::groupby_engine
