#include "groupby/sink/chunk_partials.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "groupby/cpu_engine.hpp"
#include "groupby/ops/registry.hpp"
#include "groupby/sink/piece_arena.hpp"
#include "groupby/sink/sink_config.hpp"
#include "table/made_here.hpp"

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
Buffer copy_of(const std::byte* data, std::size_t n, PieceArena* arena) {
  return filled_buffer<T>(arena, n, [&](T* out) {
    if (n > 0) std::memcpy(out, data, n * sizeof(T));
  });
}

Column owned_copy(const Column& c, PieceArena* arena) {
  Column out;
  out.name = c.name;
  out.type = c.type;
  out.length = c.length;
  if (c.type == ColumnType::str) {
    const auto o = c.string_offsets();
    out.offsets = copy_of<std::uint64_t>(c.offsets.data(), c.length + 1, arena);
    out.values = copy_of<std::byte>(c.values.data(), o[c.length], arena);
  } else {
    out.values = copy_of<std::byte>(c.values.data(), c.length * value_width(c.type), arena);
  }
  if (!c.validity.empty()) out.validity = copy_of<std::uint8_t>(c.validity.data(), (c.length + 7) / 8, arena);
  return out;
}

// A number column of n rows written by fill(T*), no missing values.
template <class T, class Fill>
Column number_column(std::string name, std::size_t n, PieceArena* arena, Fill&& fill) {
  Column out;
  out.name = std::move(name);
  out.type = column_type_v<T>;
  out.length = n;
  out.values = filled_buffer<T>(arena, n, std::forward<Fill>(fill));
  return out;
}

// c's values as `type` (a sum's wider type, a mean's f64), missing where c's are; an owned copy.
Column converted(const Column& c, ColumnType type, std::string name, PieceArena* arena) {
  Column out;
  if (c.type == type) {
    out = owned_copy(c, arena);
    out.name = std::move(name);
    return out;
  }
  out = visit_numeric(c.type, [&](auto from) {
    const auto in = c.numbers<decltype(from)>();
    return visit_numeric(type, [&](auto to) {
      using To = decltype(to);
      return number_column<To>(name, in.size(), arena, [&](To* v) {
        for (std::size_t i = 0; i < in.size(); ++i) v[i] = static_cast<To>(in[i]);
      });
    });
  });
  if (!c.validity.empty()) out.validity = copy_of<std::uint8_t>(c.validity.data(), (c.length + 7) / 8, arena);
  return out;
}

// n ones, read only, shared by every one-row partial groups' row counts: 10^7 rows would otherwise
// copy 80 MB of ones into fresh pages for each such column.
Buffer ones(std::size_t n) {
  static std::mutex lock;
  static std::shared_ptr<const std::vector<std::int64_t>> held;
  const std::lock_guard hold(lock);
  if (!held || held->size() < n) held = std::make_shared<const std::vector<std::int64_t>>(n, 1);
  return Buffer::borrow(held->data(), n * sizeof(std::int64_t), held);
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
  return Table(std::move(cols), detail::kMadeHere);  // the chunk's columns, checked as it was made
}

Table partial_groups(const Table& chunk, const SinkPlan& plan) {
  Report ignored;  // the engine's notes per chunk; finish() reports the whole
  return cpu_groupby::run(engine_input(chunk, plan), plan.partial, SinkConfig::kConsumeThreads, ignored);
}

Table row_partials(const Table& chunk, const SinkPlan& plan, const Table& like, PieceArena* arena) {
  const Table in = engine_input(chunk, plan);
  const std::size_t n = in.rows();
  std::vector<Column> cols;
  for (const auto& k : plan.spec.by) cols.push_back(owned_copy(in.column(k), arena));
  for (const auto& a : plan.partial.aggs) {
    std::string name = output_names(a).front();
    const ColumnType type = like.column(name).type;
    switch (a.op) {
      case AggOp::count_rows: {
        Column c;
        c.name = std::move(name);
        c.type = ColumnType::i64;
        c.length = n;
        c.values = ones(n);
        cols.push_back(std::move(c));
        break;
      }
      case AggOp::count: {
        const Column& c = in.column(a.column);
        cols.push_back(number_column<std::int64_t>(std::move(name), n, arena, [&](std::int64_t* v) {
          for (std::size_t i = 0; i < n; ++i) v[i] = c.present(i);
        }));
        break;
      }
      case AggOp::var:  // one value has no sample variance
        cols.push_back(
            make_column(std::move(name), std::vector<double>(n, 0.0), std::vector<std::uint8_t>((n + 7) / 8)));
        break;
      // sum, min, max, first, last and mean of one value: that value (missing where it is).
      default: cols.push_back(converted(in.column(a.column), type, std::move(name), arena));
    }
  }
  return Table(std::move(cols), detail::kMadeHere);  // copies of checked columns
}

Table kept_rows(const Table& chunk, const SinkPlan& plan, PieceArena* arena) {
  std::vector<Column> cols;
  for (const auto& name : plan.kept_read) cols.push_back(owned_copy(chunk.column(name), arena));
  return Table(std::move(cols), detail::kMadeHere);  // copies of checked columns
}

std::size_t table_bytes(const Table& t) {
  std::size_t b = 0;
  for (const Column& c : t.columns()) b += c.values.size() + c.offsets.size() + c.validity.size();
  return b;
}

}  // namespace tandem::sink
