#include "groupby/gpu_route.hpp"

#include <fmt/format.h>

#include "groupby/cpu_output.hpp"
#include "groupby/ops/registry.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::gpu_route {
namespace {

bool covered(AggOp op) {
  return op == AggOp::count_rows || op == AggOp::count || op == AggOp::sum || op == AggOp::min || op == AggOp::max ||
         op == AggOp::mean;
}

const Column* value_column(const Table& input, const GroupBySpec& spec) {
  for (const auto& a : spec.aggs)
    if (a.op != AggOp::count_rows) return &input.column(a.column);
  return nullptr;
}

template <class T>
T from_bits(std::uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// Whether |values| * count may reach 2^63 in some group (then an int64 sum may have wrapped).
bool may_wrap(const mr::GroupBy& g) {
  for (const auto& r : g.rows) {
    const unsigned __int128 big = std::max(r.imin < 0 ? -static_cast<__int128>(r.imin) : r.imin,
                                           r.imax < 0 ? -static_cast<__int128>(r.imax) : r.imax);
    if (big * r.count >= (static_cast<unsigned __int128>(1) << 63)) return true;
  }
  return false;
}

template <class V>
Column aggregate_column(const mr::GroupBy& g, const Aggregation& a) {
  const auto& rows = g.rows;
  const std::string name = output_names(a).front();
  constexpr bool fl = std::is_floating_point_v<V>;
  auto col = [&](auto f) {
    using Out = decltype(f(rows.front()));
    return cpu_groupby::build_numbers<Out>(name, rows.size(), 1,
                                           [&](std::size_t i) { return std::optional(f(rows[i])); });
  };
  switch (a.op) {
    case AggOp::count_rows:
    case AggOp::count: return col([](const mr::GroupRow& r) { return static_cast<std::int64_t>(r.count); });
    case AggOp::sum:
      if constexpr (fl) return col([](const mr::GroupRow& r) { return r.dsum; });
      else return col([](const mr::GroupRow& r) { return r.isum; });
    case AggOp::min:
      if constexpr (fl) return col([](const mr::GroupRow& r) { return static_cast<V>(r.dmin); });
      else return col([](const mr::GroupRow& r) { return static_cast<V>(r.imin); });
    case AggOp::max:
      if constexpr (fl) return col([](const mr::GroupRow& r) { return static_cast<V>(r.dmax); });
      else return col([](const mr::GroupRow& r) { return static_cast<V>(r.imax); });
    default: break;
  }
  if constexpr (fl) return col([](const mr::GroupRow& r) { return r.dsum / static_cast<double>(r.count); });
  else return col([](const mr::GroupRow& r) { return static_cast<double>(r.isum) / static_cast<double>(r.count); });
}

}  // namespace

std::optional<std::string> gap(const Table& input, const GroupBySpec& spec) {
  if (spec.by.size() != 1) return fmt::format("{} key columns (it takes one)", spec.by.size());
  const Column& key = input.column(spec.by.front());
  if (!is_integer(key.type))
    return fmt::format("the {} key column '{}' (it takes integers)", to_string(key.type), key.name);
  if (key.missing_count() > 0) return fmt::format("missing keys in '{}'", key.name);
  const Column* values = value_column(input, spec);
  for (const auto& a : spec.aggs) {
    if (!covered(a.op)) return agg::describe(a);
    if (a.op != AggOp::count_rows && a.column != values->name)
      return fmt::format("aggregations of two columns ('{}' and '{}')", values->name, a.column);
  }
  if (values == nullptr) return std::nullopt;
  if (values->type == ColumnType::str || values->type == ColumnType::u32 || values->type == ColumnType::u64)
    return fmt::format("the {} value column '{}' (it takes f32, f64, i32 or i64)", to_string(values->type),
                       values->name);
  if (values->missing_count() > 0) return fmt::format("missing values in '{}'", values->name);
  return std::nullopt;
}

std::size_t input_bytes(const Table& input, const GroupBySpec& spec) {
  const Column* values = value_column(input, spec);
  std::size_t bytes = 0;
  for (const auto& k : spec.by) bytes += input.column(k).values.size();
  return bytes + (values ? values->values.size() : 0);
}

std::optional<Table> run(const Table& input, const GroupBySpec& spec, Report& report) {
  const Column& key = input.column(spec.by.front());
  const Column* values = value_column(input, spec);
  const DType vt = values ? to_dtype(values->type) : DType::f64;
  mr::Options o;
  o.device = Device::gpu;
  const mr::GroupBy g =
      mr::groupby(to_dtype(key.type), key.values.data(), key.length, vt, values ? values->values.data() : nullptr,
                  values ? values->length : 0, values != nullptr, o);
  for (const auto& s : g.report.stages) report.stages.push_back(s);
  for (const auto& n : g.report.notes) report.notes.push_back(n);
  if (values && values->type == ColumnType::i64 && may_wrap(g)) return std::nullopt;
  Table out;
  out.add(visit_numeric(key.type, [&](auto t) {
    using K = decltype(t);
    return cpu_groupby::build_numbers<K>(
        key.name, g.rows.size(), 1, [&](std::size_t i) { return std::optional(from_bits<K>(g.rows[i].key_bits)); });
  }));
  for (const auto& a : spec.aggs) {
    out.add(visit_numeric(values ? values->type : ColumnType::f64,
                          [&](auto v) { return aggregate_column<decltype(v)>(g, a); }));
    report.note(fmt::format("{}: GPU hash group-by", agg::describe(a)));
  }
  return out;
}

}  // namespace tandem::gpu_route
