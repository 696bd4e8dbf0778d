// tandem groupby: group a table by key columns with several aggregations (tandem::groupby), or,
// in the older form with --keys, aggregate a values file by a keys file (MapReduce engine).
//
//   tandem groupby data.csv --by id1,id2 --agg 'sum(v1),mean(v3),count()' [--out out.csv]
//   tandem groupby --column id=ids.npy --column v=v.npy --by id --agg 'median(v)'
//   tandem groupby --keys k.u32 --values v.f64 --agg sum,count
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "tandem/error.hpp"
#include "tandem/format.hpp"
#include "tandem/groupby.hpp"
#include "tandem/io.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/timing.hpp"

namespace {

struct Args {
  // the table form
  std::string input, by, schema, delimiter{","};
  std::vector<std::string> columns;
  int threads{0};
  // the key and value files form
  std::string keys, values, key_type{"u32"}, value_type{"f64"}, engine{"auto"};
  // both
  std::string agg, out{"-"}, device{"auto"};
  bool explain{false};
  std::vector<const CLI::Option*> file_form_only, table_form_only;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = std::min(s.find(',', i), s.size());
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// --schema name:type,... as a map.
std::map<std::string, tandem::ColumnType> parse_schema(const std::string& text) {
  std::map<std::string, tandem::ColumnType> types;
  for (const auto& part : split_list(text)) {
    const auto colon = part.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw tandem::UsageError(fmt::format("--schema '{}': expected name:type, e.g. id1:str,v1:i64", part));
    types[part.substr(0, colon)] = tandem::parse_column_type(part.substr(colon + 1));
  }
  return types;
}

tandem::Column read_column_file(const std::string& spec, const std::map<std::string, tandem::ColumnType>& schema) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw tandem::UsageError(fmt::format("--column '{}': expected NAME=PATH", spec));
  const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
  tandem::io::Array a;
  if (tandem::io::has_npy_suffix(path)) {
    a = tandem::io::read_npy(path);
  } else {
    const auto t = schema.find(name);
    if (t == schema.end() || t->second == tandem::ColumnType::str)
      throw tandem::UsageError(fmt::format("--column {}: a raw file needs its number type in --schema ({}:i64, say)", spec, name));
    a = tandem::io::read_array(path, tandem::to_dtype(t->second));
  }
  const auto type = tandem::column_type_of(a.dtype);
  if (!type) throw tandem::InputError(fmt::format("{}: {} elements are not a table column type", path, tandem::to_string(a.dtype)));
  tandem::Column c;
  c.name = name;
  c.type = *type;
  c.length = a.count;
  c.values = tandem::Buffer::take(std::move(a.bytes));
  return c;
}

// The input table. CSV files come from tandem::read_csv (the CSV reader, merged separately);
// until then only --column files are read.
tandem::Table read_input_table(const Args& a) {
  if (!a.input.empty())
    throw tandem::UsageError(fmt::format("{}: reading CSV needs the CSV reader, which this build does not have yet; "
                                         "give the columns with --column NAME=PATH.npy",
                                         a.input));
  if (a.columns.empty()) throw tandem::UsageError("groupby: give a CSV file or --column NAME=PATH");
  const auto schema = parse_schema(a.schema);
  tandem::Table t;
  for (const auto& spec : a.columns) {
    auto c = read_column_file(spec, schema);
    if (t.num_columns() > 0 && c.length != t.rows())
      throw tandem::InputError(fmt::format("--column {}: {} values, but the columns before it have {}", spec, c.length, t.rows()));
    t.add(std::move(c));
  }
  return t;
}

// A CSV field: quoted (with doubled quotes) when it holds a comma, quote or line break.
void write_field(std::string& line, std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    line += s;
    return;
  }
  line += '"';
  for (char ch : s) line += ch == '"' ? std::string_view("\"\"") : std::string_view(&ch, 1);
  line += '"';
}

// The result as CSV: a header of column names, then a row per group; missing values are empty.
void write_table_csv(std::ostream& os, const tandem::Table& t) {
  std::string line;
  for (std::size_t c = 0; c < t.num_columns(); ++c) {
    if (c) line += ',';
    write_field(line, t.column(c).name);
  }
  os << line << '\n';
  for (std::size_t i = 0; i < t.rows(); ++i) {
    line.clear();
    for (std::size_t c = 0; c < t.num_columns(); ++c) {
      const auto& col = t.column(c);
      if (c) line += ',';
      if (!col.present(i)) continue;
      if (col.type == tandem::ColumnType::str) write_field(line, col.string(i));
      else tandem::visit_numeric(col.type, [&](auto v) { line += fmt::format("{}", col.numbers<decltype(v)>()[i]); });
    }
    os << line << '\n';
  }
}

void check_delimiter(const std::string& d) {
  if (d != "," && d != "\t" && d != "\\t" && d != "tab")
    throw tandem::UsageError(fmt::format("--delimiter '{}': expected , or \\t", d));
}

int run_table(const Args& a) {
  for (const auto* o : a.file_form_only)
    if (o->count() > 0) throw tandem::UsageError(fmt::format("{} belongs to the --keys form", o->get_name()));
  if (a.by.empty()) throw tandem::UsageError("--by: name the key columns (e.g. --by id1,id2)");
  if (a.agg.empty()) throw tandem::UsageError("--agg: name the aggregations (e.g. --agg 'sum(v1),count()')");
  check_delimiter(a.delimiter);
  const tandem::GroupBySpec spec{split_list(a.by), tandem::parse_aggregations(a.agg)};
  tandem::GroupByOptions o;
  o.device = tandem::parse_device(a.device);
  o.threads = a.threads;
  tandem::Stopwatch w;
  const tandem::Table input = read_input_table(a);
  const double read_s = w.seconds();
  auto r = tandem::groupby(input, spec, o);
  r.report.stages.insert(r.report.stages.begin(), {"read input", "cpu", read_s, fmt::format("{} rows", input.rows())});
  tandem::io::AtomicOutput out(a.out);
  write_table_csv(out.stream(), r.table);
  out.commit();
  if (a.explain) std::cerr << r.report.explain() << fmt::format("  {} rows, {} groups\n", input.rows(), r.table.rows());
  return 0;
}

int run_key_value_files(const Args& a) {
  for (const auto* o : a.table_form_only)
    if (o->count() > 0) throw tandem::UsageError(fmt::format("{} belongs to the table form, not to --keys", o->get_name()));
  const auto aggs = tandem::mr::parse_aggs(a.agg.empty() ? "sum,count" : a.agg);
  const auto kt = tandem::parse_dtype(a.key_type);
  const auto vt = tandem::parse_dtype(a.value_type);
  if (kt != tandem::DType::u32 && kt != tandem::DType::u64 && kt != tandem::DType::i32 && kt != tandem::DType::i64)
    throw tandem::UsageError(fmt::format("--key-type {}: expected u32, u64, i32 or i64", a.key_type));
  if (vt != tandem::DType::f32 && vt != tandem::DType::f64 && vt != tandem::DType::i32 && vt != tandem::DType::i64)
    throw tandem::UsageError(fmt::format("--value-type {}: expected f32, f64, i32 or i64", a.value_type));
  const bool has_values = !a.values.empty();
  for (auto g : aggs)
    if (g != tandem::mr::AggKind::count && !has_values)
      throw tandem::UsageError(fmt::format("--agg {} needs --values", tandem::mr::to_string(g)));
  tandem::mr::Options o;
  o.device = tandem::parse_device(a.device);
  if (a.engine == "auto") o.mode = tandem::mr::Options::Mode::auto_;
  else if (a.engine == "hash") o.mode = tandem::mr::Options::Mode::hash;
  else if (a.engine == "seed") o.mode = tandem::mr::Options::Mode::seed;
  else throw tandem::UsageError(fmt::format("--engine {}: expected auto, hash or seed", a.engine));
  tandem::Stopwatch w;
  auto keys = tandem::io::read_array(a.keys, kt);
  tandem::io::Array values;
  if (has_values) values = tandem::io::read_array(a.values, vt);
  const double read_s = w.seconds();
  if (has_values && values.count != keys.count)
    throw tandem::InputError(fmt::format("{} has {} keys but {} has {} values: the columns must have the same length",
                                         a.keys, keys.count, a.values, values.count));
  tandem::io::AtomicOutput out(a.out);
  auto g = tandem::mr::groupby(kt, keys.bytes.data(), keys.count, vt, has_values ? values.bytes.data() : nullptr,
                               values.count, has_values, o);
  g.report.stages.insert(g.report.stages.begin(), {"read input", "cpu", read_s, fmt::format("{} keys", keys.count)});
  tandem::mr::write_groupby_csv(out.stream(), g, aggs);
  out.commit();
  if (a.explain) std::cerr << g.report.explain() << fmt::format("  {} rows, {} groups\n", keys.count, g.rows.size());
  return 0;
}

const bool registered = tandem::cli::register_command({
    "groupby", "Group a table by key columns: count, sum, mean, min, max, var, std, first, last, nunique, median, quantile, top (CSV out)",
    [](CLI::App& app) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      a->table_form_only = {
          app.add_option("input", a->input, "CSV file with a header row (needs the CSV reader; or use --column)"),
          app.add_option("--by", a->by, "Key columns, comma-separated: id1,id2"),
          app.add_option("--column", a->columns, "An input column NAME=PATH (.npy, or raw with its type in --schema); repeatable"),
          app.add_option("--schema", a->schema, "Column types name:type,... (i32 i64 u32 u64 f32 f64 str)"),
          app.add_option("--delimiter", a->delimiter, "CSV field delimiter of the input: , or \\t"),
          app.add_option("--threads", a->threads, "CPU threads (0: every core)")};
      a->file_form_only = {
          app.add_option("--keys", a->keys, "Older form: a keys file (raw little-endian or .npy)"),
          app.add_option("--key-type", a->key_type, "Older form: u32, u64, i32 or i64")->capture_default_str(),
          app.add_option("--values", a->values, "Older form: a values file (raw or .npy); optional when --agg is count"),
          app.add_option("--value-type", a->value_type, "Older form: f32, f64, i32 or i64")->capture_default_str(),
          app.add_option("--engine", a->engine, "Older form, GPU engine: auto, hash or seed")->capture_default_str()};
      app.add_option("--agg", a->agg,
                     "Aggregations: 'sum(v1),mean(v3),count(),quantile(v3,0.9),top(v3,2),count(v2) as n' "
                     "(older form: sum,count,min,max,mean; default sum,count)");
      app.add_option("--out", a->out, "Output CSV ('-' for standard output)")->capture_default_str();
      app.add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
      app.add_flag("--explain", a->explain, "Print which engine ran which aggregation and the stages' times (stderr)");
      return [a] { return a->keys.empty() ? run_table(*a) : run_key_value_files(*a); };
    }});

}  // namespace
