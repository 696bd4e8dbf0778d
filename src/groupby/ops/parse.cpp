// Aggregations as text: "sum(v1),mean(v3),count(),quantile(v3,0.9),top(v3,2) as best".
#include <charconv>

#include <fmt/format.h>

#include "groupby/ops/registry.hpp"
#include "tandem/core/error.hpp"
#include "tandem/groupby.hpp"

namespace tandem {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The text split at commas outside parentheses.
std::vector<std::string_view> split_calls(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      parts.push_back(trim(text.substr(start, i - start)));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  return parts;
}

std::vector<std::string_view> split_args(std::string_view args) {
  std::vector<std::string_view> out;
  if (trim(args).empty()) return out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= args.size(); ++i)
    if (i == args.size() || args[i] == ',') {
      out.push_back(trim(args.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

[[noreturn]] void bad(std::string_view call, std::string_view why) {
  throw UsageError(fmt::format("aggregation '{}': {}", call, why));
}

void parse_param(Aggregation& a, agg::Param p, std::string_view text, std::string_view call) {
  if (p == agg::Param::q) {
    const auto r = std::from_chars(text.data(), text.data() + text.size(), a.q);
    if (r.ec != std::errc{} || r.ptr != text.data() + text.size() || !(a.q >= 0 && a.q <= 1))
      bad(call, fmt::format("quantile '{}' is not a number from 0 to 1", text));
  } else {
    const auto r = std::from_chars(text.data(), text.data() + text.size(), a.n);
    if (r.ec != std::errc{} || r.ptr != text.data() + text.size() || a.n < 1 || a.n > 1000)
      bad(call, fmt::format("count '{}' is not a whole number from 1 to 1000", text));
  }
}

// "sum(v))" must not read column "v)": every ')' closes an earlier '(' and all are closed.
bool balanced(std::string_view call) {
  int depth = 0;
  for (const char c : call) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth < 0) return false;
  }
  return depth == 0;
}

Aggregation parse_call(std::string_view call) {
  if (!balanced(call)) bad(call, "unbalanced parentheses");
  const auto open = call.find('(');
  const auto close = call.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    bad(call, "expected name(column), e.g. sum(v1)");
  const auto name = trim(call.substr(0, open));
  const auto args = split_args(call.substr(open + 1, close - open - 1));
  Aggregation a;
  const auto rest = trim(call.substr(close + 1));
  if (!rest.empty()) {
    if (rest.substr(0, 2) != "as" || rest.size() < 3 || (rest[2] != ' ' && rest[2] != '\t') ||
        trim(rest.substr(2)).empty())
      bad(call, fmt::format("unexpected '{}' after the call (expected 'as NAME')", rest));
    a.name = std::string(trim(rest.substr(2)));
  }
  const agg::OpInfo* info = nullptr;
  const agg::OpInfo* named = nullptr;
  for (const auto& o : agg::operators()) {
    if (o.name != name) continue;
    named = &o;
    if (o.reads_column == !args.empty()) info = &o;
  }
  if (named == nullptr) {
    std::string known;
    for (const auto& o : agg::operators())
      if (o.reads_column) known += (known.empty() ? "" : ", ") + std::string(o.name);
    bad(call, fmt::format("unknown aggregation '{}' (expected count(), {})", name, known));
  }
  if (info == nullptr) info = named;
  a.op = info->op;
  const std::size_t want = info->reads_column ? (info->param == agg::Param::none ? 1 : 2) : 0;
  if (args.size() != want) bad(call, fmt::format("{} takes {} argument{}", name, want, want == 1 ? "" : "s"));
  if (want > 0) {
    if (args[0].empty()) bad(call, "empty column name");
    a.column = std::string(args[0]);
  }
  if (want == 2) parse_param(a, info->param, args[1], call);
  return a;
}

}  // namespace

std::string_view to_string(AggOp op) { return agg::operator_info(op).name; }

std::vector<Aggregation> parse_aggregations(std::string_view text) {
  if (trim(text).empty()) throw UsageError("aggregations: none given (e.g. 'sum(v1),count()')");
  std::vector<Aggregation> out;
  for (const auto call : split_calls(text)) {
    if (call.empty()) throw UsageError(fmt::format("aggregations '{}': an empty item between commas", text));
    out.push_back(parse_call(call));
  }
  return out;
}

std::vector<std::string> output_names(const Aggregation& a) {
  if (a.op == AggOp::top) {
    std::vector<std::string> names;
    for (std::size_t i = 1; i <= a.n; ++i)
      names.push_back(a.name.empty() ? fmt::format("top{}_{}", i, a.column) : fmt::format("{}{}", a.name, i));
    return names;
  }
  if (!a.name.empty()) return {a.name};
  if (a.op == AggOp::count_rows) return {"count"};
  if (a.op == AggOp::quantile) return {fmt::format("q{}_{}", a.q, a.column)};
  return {fmt::format("{}_{}", to_string(a.op), a.column)};
}

}  // namespace tandem
