#include "groupby/sink/chunk_partials.hpp"

#include <algorithm>
#include <cstring>

#include "groupby/cpu_engine.hpp"
#include "groupby/ops/registry.hpp"
#include "groupby/sink/sink_config.hpp"

namespace tandem::sink {
namespace {

void add_once(std::vector<std::string>& names, const std::string& name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
}

// The column's values as f64 under another name (the same buffers when it is f64 already).
Column as_f64(const Column& c, std::string name) {
  if (c.type == ColumnType::f64) {
    Column alias = c;
    alias.name = std::move(name);
    return alias;
  }
  std::vector<double> v(c.length);
  visit_numeric(c.type, [&](auto zero) {
    const auto in = c.numbers<decltype(zero)>();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(in[i]);
    return 0;
  });
  Column out = make_column(std::move(name), std::move(v));
  out.validity = c.validity;
  return out;
}

template <class T>
Buffer copy_of(const std::byte* data, std::size_t n) {
  std::vector<T> v(n);
  if (n > 0) std::memcpy(v.data(), data, n * sizeof(T));
  return Buffer::take(std::move(v));
}

Column owned_copy(const Column& c) {
  Column out;
  out.name = c.name;
  out.type = c.type;
  out.length = c.length;
  if (c.type == ColumnType::str) {
    const auto o = c.string_offsets();
    out.offsets = copy_of<std::uint64_t>(c.offsets.data(), c.length + 1);
    out.values = copy_of<std::byte>(c.values.data(), o[c.length]);
  } else {
    out.values = copy_of<std::byte>(c.values.data(), c.length * value_width(c.type));
  }
  if (!c.validity.empty()) out.validity = copy_of<std::uint8_t>(c.validity.data(), (c.length + 7) / 8);
  return out;
}

Column renamed(Column c, std::string name) {
  c.name = std::move(name);
  return c;
}

// c's values as `type` (a sum's wider type, a mean's f64), missing where c's are; an owned copy.
Column converted(const Column& c, ColumnType type, std::string name) {
  if (c.type == type) return renamed(owned_copy(c), std::move(name));
  Column out = visit_numeric(c.type, [&](auto from) {
    const auto in = c.numbers<decltype(from)>();
    return visit_numeric(type, [&](auto to) {
      using To = decltype(to);
      std::vector<To> v(in.size());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<To>(in[i]);
      return make_column(name, std::move(v));
    });
  });
  if (!c.validity.empty()) out.validity = copy_of<std::uint8_t>(c.validity.data(), (c.length + 7) / 8);
  return out;
}

}  // namespace

SinkPlan plan_sink(const GroupBySpec& spec) {
  SinkPlan p;
  p.spec = spec;
  p.combine = plan_combine(spec.aggs, CombineTarget::chunks);
  p.partial = {spec.by, p.combine.partial};
  p.partial.aggs.push_back({.op = AggOp::count_rows, .column = {}, .name = kRowsColumn});
  p.final = {spec.by, p.combine.final};
  p.final.aggs.push_back({.op = AggOp::sum, .column = kRowsColumn, .name = kRowsColumn});
  p.kept = {spec.by, p.combine.kept};
  p.kept_only = !p.kept.aggs.empty() && p.kept.aggs.size() == spec.aggs.size();
  p.read = spec.by;
  for (const auto& a : spec.aggs)
    if (agg::operator_info(a.op).reads_column) add_once(p.read, a.column);
  if (!p.kept.aggs.empty()) {
    p.kept_read = spec.by;
    for (const auto& a : p.kept.aggs) add_once(p.kept_read, a.column);
  }
  return p;
}

Table engine_input(const Table& chunk, const SinkPlan& plan) {
  std::vector<Column> cols;
  for (const auto& name : plan.read) cols.push_back(chunk.column(name));
  for (const auto& name : plan.combine.as_f64) cols.push_back(as_f64(chunk.column(name), as_f64_name(name)));
  return Table(std::move(cols));
}

Table partial_groups(const Table& chunk, const SinkPlan& plan) {
  Report ignored;  // the engine's notes per chunk; finish() reports the whole
  return cpu_groupby::run(engine_input(chunk, plan), plan.partial, SinkConfig::kConsumeThreads, ignored);
}

Table row_partials(const Table& chunk, const SinkPlan& plan, const Table& like) {
  const Table in = engine_input(chunk, plan);
  const std::size_t n = in.rows();
  std::vector<Column> cols;
  for (const auto& k : plan.spec.by) cols.push_back(owned_copy(in.column(k)));
  for (const auto& a : plan.partial.aggs) {
    std::string name = output_names(a).front();
    const ColumnType type = like.column(name).type;
    switch (a.op) {
      case AggOp::count_rows: cols.push_back(make_column(std::move(name), std::vector<std::int64_t>(n, 1))); break;
      case AggOp::count: {
        const Column& c = in.column(a.column);
        std::vector<std::int64_t> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = c.present(i);
        cols.push_back(make_column(std::move(name), std::move(v)));
        break;
      }
      case AggOp::var:  // one value has no sample variance
        cols.push_back(
            make_column(std::move(name), std::vector<double>(n, 0.0), std::vector<std::uint8_t>((n + 7) / 8)));
        break;
      // sum, min, max, first, last and mean of one value: that value (missing where it is).
      default: cols.push_back(converted(in.column(a.column), type, std::move(name)));
    }
  }
  return Table(std::move(cols));
}

Table kept_rows(const Table& chunk, const SinkPlan& plan) {
  std::vector<Column> cols;
  for (const auto& name : plan.kept_read) cols.push_back(owned_copy(chunk.column(name)));
  return Table(std::move(cols));
}

std::size_t table_bytes(const Table& t) {
  std::size_t b = 0;
  for (const Column& c : t.columns()) b += c.values.size() + c.offsets.size() + c.validity.size();
  return b;
}

}  // namespace tandem::sink
