#include "groupby/ops/registry.hpp"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "groupby/cpu_aggregator.hpp"
#include "groupby/ops/count.hpp"
#include "groupby/ops/count_rows.hpp"
#include "groupby/ops/first.hpp"
#include "groupby/ops/last.hpp"
#include "groupby/ops/max.hpp"
#include "groupby/ops/mean.hpp"
#include "groupby/ops/median.hpp"
#include "groupby/ops/min.hpp"
#include "groupby/ops/nunique.hpp"
#include "groupby/ops/quantile.hpp"
#include "groupby/ops/std.hpp"
#include "groupby/ops/sum.hpp"
#include "groupby/ops/top.hpp"
#include "groupby/ops/var.hpp"
#include "tandem/core/error.hpp"

namespace tandem::agg {
namespace {

using cpu_groupby::Aggregator;

// Calls f(T{}) with the element type of a column: a number type or std::string_view.
template <class F>
decltype(auto) visit_input(ColumnType t, F&& f) {
  if (t == ColumnType::str) return f(std::string_view{});
  return visit_numeric(t, f);
}

template <class Out>
constexpr ColumnType column_type_of_out() {
  if constexpr (std::is_same_v<Out, std::string_view>) return ColumnType::str;
  else return column_type_v<Out>;
}

template <template <class> class Op>
bool accepts(ColumnType t) {
  return visit_input(t, [](auto v) { return Op<decltype(v)>::valid; });
}

template <template <class> class Op>
ColumnType output_type(ColumnType t) {
  return visit_input(t, [t](auto v) {
    using O = Op<decltype(v)>;
    if constexpr (O::valid) return column_type_of_out<typename O::Out>();
    else return t;
  });
}

template <template <class> class Op>
std::unique_ptr<Aggregator> make_cpu(const Aggregation& a, const Column* input) {
  return visit_input(input->type, [&](auto v) -> std::unique_ptr<Aggregator> {
    using T = decltype(v);
    using O = Op<T>;
    if constexpr (!O::valid)
      throw UsageError(fmt::format("{} does not apply to column '{}'", describe(a), input->name));
    else if constexpr (O::holistic) return std::make_unique<cpu_groupby::Holistic<O, T>>(a, input);
    else return std::make_unique<cpu_groupby::Decomposable<O, T>>(a, input);
  });
}

bool accepts_any(ColumnType) { return true; }
ColumnType count_output(ColumnType) { return ColumnType::i64; }
std::unique_ptr<Aggregator> make_count_rows(const Aggregation& a, const Column*) {
  using T = cpu_groupby::NoInput;
  return std::make_unique<cpu_groupby::Decomposable<CountRowsOp<T>, T>>(a, nullptr);
}

template <template <class> class Op>
constexpr OpInfo row(AggOp op, std::string_view name, Param param = Param::none) {
  return {op, name, Op<double>::holistic, true, param, &accepts<Op>, &output_type<Op>, &make_cpu<Op>};
}

const std::array<OpInfo, 14> kOperators{{
    {AggOp::count_rows, "count", false, false, Param::none, &accepts_any, &count_output, &make_count_rows},
    row<CountOp>(AggOp::count, "count"),
    row<SumOp>(AggOp::sum, "sum"),
    row<MeanOp>(AggOp::mean, "mean"),
    row<MinOp>(AggOp::min, "min"),
    row<MaxOp>(AggOp::max, "max"),
    row<VarOp>(AggOp::var, "var"),
    row<StdOp>(AggOp::std, "std"),
    row<FirstOp>(AggOp::first, "first"),
    row<LastOp>(AggOp::last, "last"),
    row<NuniqueOp>(AggOp::nunique, "nunique"),
    row<MedianOp>(AggOp::median, "median"),
    row<QuantileOp>(AggOp::quantile, "quantile", Param::q),
    row<TopOp>(AggOp::top, "top", Param::n),
}};

}  // namespace

std::span<const OpInfo> operators() { return kOperators; }

const OpInfo& operator_info(AggOp op) {
  for (const auto& o : kOperators)
    if (o.op == op) return o;
  throw Error(fmt::format("aggregation operator {} is not registered", static_cast<int>(op)));
}

std::string describe(const Aggregation& a) {
  const auto& o = operator_info(a.op);
  switch (o.param) {
    case Param::q: return fmt::format("{}({}, {})", o.name, a.column, a.q);
    case Param::n: return fmt::format("{}({}, {})", o.name, a.column, a.n);
    case Param::none: break;
  }
  return fmt::format("{}({})", o.name, a.column);
}

void check_applies(const Aggregation& a, const Table& input) {
  const auto& o = operator_info(a.op);
  if (!o.reads_column) return;
  const Column* c = input.find(a.column);
  if (c == nullptr) {
    try {
      (void)input.column(a.column);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("{}: {}", describe(a), e.what()));
    }
  }
  if (o.accepts(c->type)) return;
  // A str column with no value at all (a CSV schema may name one so): its type says nothing.
  bool any_value = false;
  for (std::size_t i = 0; i < c->length && !any_value; ++i) any_value = c->present(i);
  const std::string why = c->type == ColumnType::str && !any_value
                              ? fmt::format(
                                    " (it holds no values: name its type in the schema, "
                                    "e.g. {}:f64)",
                                    a.column)
                              : "";
  throw UsageError(fmt::format("{}: column '{}' is {}, which {} does not accept{}", describe(a), a.column,
                               to_string(c->type), o.name, why));
}

}  // namespace tandem::agg
