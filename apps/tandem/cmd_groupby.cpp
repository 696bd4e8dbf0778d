// tandem groupby: group-by over a table (a CSV file or .npy columns: several keys, strings,
// missing values, every aggregation of tandem/groupby.hpp); the key/value-file form (--keys,
// --values) is one more table input, its columns `key` and `value`.
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "distributed.hpp"
#include "options.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/groupby.hpp"
#include "tandem/groupby_csv.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table/files.hpp"

namespace {

struct Args {
  // table form
  std::string table, by, schema, delimiter, out_format{"auto"};
  std::vector<std::string> columns;
  int threads{0};
  // key/value-file form (types empty: a .npy file's header type, else u32 keys and f64 values)
  std::string keys, values, key_type, value_type;
  // both
  std::string agg, out{"-"}, device{"auto"};
  bool explain{false};
  bool distributed{false}, gather{false};
  // streaming CSV scan
  std::size_t memory_limit{0};
  std::string temp_dir;
  bool quiet{false};
};

// --column NAME=PATH[:TYPE]: a raw file needs its TYPE; a .npy file's header gives it (type empty).
struct ColumnOption {
  std::string name, path, type;
};
ColumnOption parse_column_option(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    throw tandem::UsageError(fmt::format("--column {}: expected NAME=PATH[:TYPE]", spec));
  ColumnOption c{spec.substr(0, eq), spec.substr(eq + 1), ""};
  if (const auto colon = c.path.rfind(':'); colon != std::string::npos) {
    c.type = c.path.substr(colon + 1);
    c.path.resize(colon);
  }
  if (c.type.empty() && !tandem::io::has_npy_suffix(c.path))
    throw tandem::UsageError(fmt::format("--column {}: a raw file needs its type (NAME=PATH:TYPE, e.g. :i64)", spec));
  return c;
}

tandem::Column read_column_file(const ColumnOption& c) {
  return tandem::read_column(c.name, c.path,
                             c.type.empty() ? tandem::io::npy_dtype(c.path) : tandem::parse_dtype(c.type));
}

char parse_delimiter(const std::string& d) {
  if (d.empty()) return 0;
  if (d == "," || d == "comma") return ',';
  if (d == "\\t" || d == "\t" || d == "tab") return '\t';
  throw tandem::UsageError(fmt::format("--delimiter {}: expected ',' or '\\t'", d));
}

// The comma-separated names of an option's value (`option` names it in the error for an empty one).
std::vector<std::string> split_names(const std::string& text, std::string_view option = "--by") {
  std::vector<std::string> out;
  std::size_t b = 0;
  while (b <= text.size()) {
    const auto e = std::min(text.find(',', b), text.size());
    if (e == b) throw tandem::UsageError(fmt::format("{} {}: an empty name", option, text));
    out.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

// Adds a --column input to the table, whose columns must all have its length.
void add_column(tandem::Table& t, tandem::Column c, const std::string& spec) {
  if (t.num_columns() > 0 && c.length != t.rows())
    throw tandem::InputError(
        fmt::format("--column {}: {} values, but the columns before it have {}", spec, c.length, t.rows()));
  t.add(std::move(c));
}

tandem::CsvOptions csv_options(const Args& a) {
  tandem::CsvOptions o;
  o.delimiter = parse_delimiter(a.delimiter);
  if (!a.schema.empty()) o.schema = tandem::parse_csv_schema(a.schema);
  o.threads = a.threads;
  return o;
}

tandem::Table read_input_table(const Args& a) {
  tandem::Table t;
  if (!a.table.empty()) {
    t = tandem::read_csv(a.table, csv_options(a));
  } else if (!a.schema.empty() || !a.delimiter.empty()) {
    throw tandem::UsageError("--schema and --delimiter apply to a CSV input");
  }
  for (const auto& spec : a.columns) {
    add_column(t, read_column_file(parse_column_option(spec)), spec);
  }
  if (t.num_columns() == 0) throw tandem::UsageError("no input: name a CSV file or give --column NAME=PATH");
  return t;
}

// Writes the result as CSV, or as a folder of .npy columns (--out-format npy, or --out ending in '/').
void write_result(const Args& a, const tandem::Table& t, tandem::io::AtomicOutput* csv) {
  if (csv) {
    tandem::write_csv(csv->stream(), t);
    csv->commit();
  } else {
    tandem::write_table_folder(a.out, t);
  }
}

bool folder_output(const Args& a) {
  if (a.out_format == "npy" && a.out == "-")
    throw tandem::UsageError("--out-format npy writes a folder of files, which standard output cannot hold (--out -)");
  if (a.out_format == "npy") return true;
  if (a.out_format == "csv") return false;
  if (a.out_format != "auto")
    throw tandem::UsageError(fmt::format("--out-format {}: expected auto, csv or npy", a.out_format));
  return a.out != "-" && a.out.back() == '/';
}

#if TANDEM_HAS_MPI
// This rank's table: its part of a shared CSV (or its own {rank} file), or its columns.
tandem::Table read_rank_table(const tandem::dist::Context& ctx, const Args& a) {
  tandem::Table t;
  if (!a.table.empty()) {
    t = tandem::cli::read_rank_csv(ctx, a.table, csv_options(a));
  }
  for (const auto& spec : a.columns) {
    ColumnOption opt;
    tandem::DType dt{};
    ctx.run_agreed([&] {
      opt = parse_column_option(spec);
      dt = opt.type.empty() ? tandem::io::npy_dtype(tandem::dist::expand_rank_path(opt.path, ctx.rank(), ctx.size()))
                            : tandem::parse_dtype(opt.type);
      if (!tandem::column_type_of(dt))
        throw tandem::UsageError(fmt::format("--column {}: {} is not a column type", spec, opt.type));
    });
    tandem::io::MappedArray arr = tandem::cli::read_rank_array(ctx, opt.path, dt);
    ctx.run_agreed([&] {
      tandem::Column c;
      c.name = opt.name;
      c.type = *tandem::column_type_of(dt);
      c.length = arr.count;
      c.values = tandem::Buffer::borrow(arr.data, arr.bytes(), std::move(arr.owner));
      add_column(t, std::move(c), spec);
    });
  }
  if (t.num_columns() == 0) throw tandem::UsageError("no input: name a CSV file or give --column NAME=PATH");
  return t;
}

int run_table_distributed(const Args& a, const tandem::GroupBySpec& spec, const tandem::GroupByOptions& o) {
  auto& ctx = tandem::cli::mpi_context();
  const std::string out = tandem::cli::rank_output(ctx, a.out, a.gather);
  const bool to_folder = folder_output(a);
  std::unique_ptr<tandem::io::AtomicOutput> csv;
  ctx.run_agreed([&] {
    if (!to_folder && !out.empty()) csv = std::make_unique<tandem::io::AtomicOutput>(out);
  });
  tandem::Stopwatch w;
  const tandem::Table input = read_rank_table(ctx, a);
  const double read_s = w.seconds();
  auto r = tandem::dist::groupby(ctx, input, spec, o, a.gather);
  tandem::cli::print_notices(r.report.report);
  tandem::cli::write_then_commit(
      ctx,
      [&] {
        if (out.empty()) return;
        if (csv) tandem::write_csv(csv->stream(), r.table);
        else tandem::write_table_folder(out, r.table);
      },
      csv.get(), nullptr, csv ? std::string() : out);
  if (a.explain && ctx.rank() == 0)
    std::cerr << ctx.describe() << '\n'
              << r.report.report.explain()
              << fmt::format("  read {}; rank 0: {} rows in, {} groups out\n", tandem::human_seconds(read_s),
                             input.rows(), r.table.rows());
  return 0;
}
#endif

// Progress on stderr for a large input when stderr is a terminal.
std::function<void(std::size_t)> progress_printer(const Args& a) {
  struct stat st {};
  if (a.quiet || !::isatty(STDERR_FILENO) || a.table == "-" || ::stat(a.table.c_str(), &st) != 0) return {};
  const auto total = static_cast<std::size_t>(st.st_size);
  const bool compressed = a.table.ends_with(".gz") || a.table.ends_with(".zst");
  if (!compressed && total < (std::size_t{256} << 20)) return {};
  auto clock = std::make_shared<tandem::Stopwatch>();
  return [total, compressed, clock](std::size_t bytes) {
    const double s = clock->seconds();
    const double rate = static_cast<double>(bytes) / std::max(s, 1e-9);
    if (compressed)
      std::cerr << fmt::format("\r{} read ({}/s)   ", tandem::human_bytes(bytes),
                               tandem::human_bytes(static_cast<std::uint64_t>(rate)));
    else
      std::cerr << fmt::format("\r{} of {} ({}/s, {} left)   ", tandem::human_bytes(bytes), tandem::human_bytes(total),
                               tandem::human_bytes(static_cast<std::uint64_t>(rate)),
                               tandem::human_seconds(static_cast<double>(total - std::min(bytes, total)) / rate));
    std::cerr.flush();
  };
}

// A CSV table form with no other inputs: streamed, only the named columns read (or, with --device
// gpu, or auto where the GPU is estimated faster, read into GPU memory and parsed there).
int run_csv_stream(const Args& a, const tandem::GroupBySpec& spec, tandem::Device device) {
  const bool to_folder = folder_output(a);
  std::unique_ptr<tandem::io::AtomicOutput> csv;
  if (!to_folder) csv = std::make_unique<tandem::io::AtomicOutput>(a.out);  // checks the destination first
  tandem::GroupByCsvOptions o;
  o.csv = csv_options(a);
  o.memory_limit = a.memory_limit;
  o.temp_dir = a.temp_dir;
  o.progress = progress_printer(a);
  o.device = device == tandem::Device::hybrid ? tandem::Device::cpu : device;
  // CSV output is written a piece at a time as the result comes (in key order), so a result
  // larger than memory never sits whole in it; the file appears only once complete.
  std::size_t groups = 0;
  double writing = 0;
  if (csv)
    o.on_result = [&](const tandem::Table& piece) {
      const tandem::Stopwatch w;
      if (groups == 0) tandem::write_csv(csv->stream(), piece);
      else tandem::write_csv_rows(csv->stream(), piece);
      groups += piece.rows();
      writing += w.seconds();
    };
  auto r = tandem::groupby_csv(a.table, spec, o);
  if (o.progress) std::cerr << "\r\033[K";
  tandem::cli::print_notices(r.report);
  if (csv && groups > 0) {
    const tandem::Stopwatch w;
    csv->commit();
    r.report.add("write output", "cpu", writing + w.seconds(),
                 fmt::format("{} groups as CSV, written as the combine handed them on (inside its time)", groups));
  } else {
    write_result(a, r.table, csv.get());  // a folder of .npy columns, or a CSV of no groups
  }
  if (a.explain) std::cerr << r.report.explain() << fmt::format("  {} groups\n", groups + r.table.rows());
  return 0;
}

// Groups a table read into memory (the --column and --keys forms); its report starts with the read.
tandem::GroupByResult group_in_memory(const tandem::Table& input, double read_s, const tandem::GroupBySpec& spec,
                                      const tandem::GroupByOptions& o) {
  auto r = tandem::groupby(input, spec, o);
  tandem::cli::print_notices(r.report);
  r.report.stages.insert(
      r.report.stages.begin(),
      {"read input", "cpu", read_s, fmt::format("{} rows, {} columns", input.rows(), input.num_columns())});
  return r;
}

void write_groups(const Args& a, const tandem::Table& input, const tandem::GroupByResult& r,
                  tandem::io::AtomicOutput* csv) {
  write_result(a, r.table, csv);
  if (a.explain) std::cerr << r.report.explain() << fmt::format("  {} rows, {} groups\n", input.rows(), r.table.rows());
}

// The CSV destination, checked before any input is read; null for a folder of .npy columns.
std::unique_ptr<tandem::io::AtomicOutput> csv_output(const Args& a) {
  if (folder_output(a)) return nullptr;
  return std::make_unique<tandem::io::AtomicOutput>(a.out);
}

tandem::GroupByOptions groupby_options(const Args& a) {
  tandem::GroupByOptions o;
  o.device = tandem::parse_device(a.device);
  o.threads = a.threads;
  return o;
}

int run_table(const Args& a) {
  if (!a.values.empty() || !a.key_type.empty() || !a.value_type.empty())
    throw tandem::UsageError("--values, --key-type and --value-type belong to the --keys form");
  if (a.by.empty()) throw tandem::UsageError("--by is required with a table input (e.g. --by id1,id2)");
  if (a.agg.empty()) throw tandem::UsageError("--agg is required (e.g. --agg 'sum(v1),count()')");
  tandem::GroupBySpec spec{split_names(a.by), tandem::parse_aggregations(a.agg)};
  const tandem::GroupByOptions o = groupby_options(a);
  if (a.distributed) {
    tandem::cli::require_mpi();
#if TANDEM_HAS_MPI
    return run_table_distributed(a, spec, o);
#endif
  }
  if (a.gather) throw tandem::UsageError("--gather goes with --distributed");
  if (!a.table.empty() && a.columns.empty()) return run_csv_stream(a, spec, o.device);
  if (a.memory_limit || !a.temp_dir.empty())
    throw tandem::UsageError("--memory-limit and --temp-dir apply to a CSV input on the CPU");
  const auto csv = csv_output(a);
  tandem::Stopwatch w;
  const tandem::Table input = read_input_table(a);
  write_groups(a, input, group_in_memory(input, w.seconds(), spec, o), csv.get());
  return 0;
}

// --agg of the --keys form (default sum,count) in the table vocabulary: "sum(value) as sum",
// "count() as count", …, so the output header stays key,sum,count,….
std::vector<tandem::Aggregation> key_value_aggregations(const Args& a) {
  std::string calls;
  for (const auto& name : split_names(a.agg.empty() ? "sum,count" : a.agg, "--agg")) {
    if (!calls.empty()) calls += ',';
    if (name == "count") {
      calls += "count() as count";
      continue;
    }
    if (name != "sum" && name != "min" && name != "max" && name != "mean")
      throw tandem::UsageError(fmt::format(
          "--agg {}: the --keys form takes sum, count, min, max and mean (a --column input takes every aggregation)",
          name));
    if (a.values.empty()) throw tandem::UsageError(fmt::format("--agg {} needs --values", name));
    calls += fmt::format("{0}(value) as {0}", name);
  }
  return tandem::parse_aggregations(calls);
}

// One file of the --keys form as a table column, read as --column reads it.
tandem::Column read_key_value_file(const std::string& name, const std::string& path, const std::string& type,
                                   std::string_view option, std::string_view fallback) {
  if (!type.empty() && !tandem::column_type_of(tandem::parse_dtype(type)))
    throw tandem::UsageError(fmt::format("{} {}: expected i32, i64, u32, u64, f32 or f64", option, type));
  const bool npy = tandem::io::has_npy_suffix(path);
  return read_column_file({name, path, type.empty() && !npy ? std::string(fallback) : type});
}

// The --keys form: a table of the column `key` and, with --values, the column `value`.
tandem::Table read_key_value_table(const Args& a) {
  tandem::Table t;
  t.add(read_key_value_file("key", a.keys, a.key_type, "--key-type", "u32"));
  if (a.values.empty()) return t;
  tandem::Column v = read_key_value_file("value", a.values, a.value_type, "--value-type", "f64");
  if (v.length != t.rows())
    throw tandem::InputError(fmt::format("{} has {} keys but {} has {} values: the columns must have the same length",
                                         a.keys, t.rows(), a.values, v.length));
  t.add(std::move(v));
  return t;
}

int run_key_value_files(const Args& a) {
  if (a.distributed) throw tandem::UsageError("--distributed takes the table form (a CSV file or --column)");
  if (!a.table.empty() || !a.by.empty() || !a.columns.empty())
    throw tandem::UsageError("--keys/--values is the key/value-file form: it takes no table, --by or --column");
  if (a.memory_limit || !a.temp_dir.empty())
    throw tandem::UsageError("--memory-limit and --temp-dir apply to a CSV input on the CPU");
  const tandem::GroupBySpec spec{{"key"}, key_value_aggregations(a)};
  const auto csv = csv_output(a);
  tandem::Stopwatch w;
  const tandem::Table input = read_key_value_table(a);
  tandem::GroupByResult r;
  try {
    r = group_in_memory(input, w.seconds(), spec, groupby_options(a));
  } catch (const tandem::InputError& e) {  // a sum beyond its type: the values file is the bad input
    throw tandem::InputError(fmt::format("{}: {}", a.values, e.what()));
  }
  write_groups(a, input, r, csv.get());
  return 0;
}

const bool registered = tandem::cli::register_command(
    {"groupby",
     "Group a table by key columns: sum, mean, count, min, max, var, std, first, last, nunique, median, quantile, top",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_option("table", a->table, "CSV file with a header row ('-' for standard input)");
       app.add_option("--by", a->by, "Key columns, comma-separated (e.g. id1,id2)");
       app.add_option("--agg", a->agg,
                      "Aggregations, e.g. 'sum(v1),mean(v3),count(),quantile(v3,0.9),top(v3,2)'; with --keys, names "
                      "of sum, count, min, max, mean over the values (default sum,count: sum(value) as sum, "
                      "count() as count)");
       app.add_option("--column", a->columns, "Add a column from a .npy or raw file: NAME=PATH[:TYPE] (repeatable)");
       app.add_option("--schema", a->schema, "CSV column types, e.g. id1:str,v1:i64 (others inferred)");
       app.add_option("--delimiter", a->delimiter, "CSV delimiter: ',' or '\\t' (default: detected from the header)");
       app.add_option("--out", a->out, "Output CSV ('-' for standard output), or a folder of .npy columns")
           ->capture_default_str();
       app.add_option("--out-format", a->out_format, "auto (a folder when --out ends in '/'), csv or npy")
           ->capture_default_str();
       app.add_option("--threads", a->threads, "CPU threads (0: all cores)")
           ->check(tandem::cli::in_range(0, tandem::cli::kMaxThreads));
       app.add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
       app.add_option("--keys", a->keys,
                      "Key/value-file form: keys file (raw little-endian or .npy), the table's column 'key'");
       app.add_option("--key-type", a->key_type,
                      "Key/value-file form: i32, i64, u32, u64, f32 or f64 (default: a .npy file's type, else u32)");
       app.add_option("--values", a->values,
                      "Key/value-file form: values file (raw or .npy), the column 'value'; optional for count");
       app.add_option("--value-type", a->value_type,
                      "Key/value-file form: i32, i64, u32, u64, f32 or f64 (default: a .npy file's type, else f64)");
       app.add_flag("--explain", a->explain, "Print what ran where and how long each stage took (stderr)");
       app.add_option("--memory-limit", a->memory_limit,
                      "CSV input: bytes the group-by's partial groups may hold before they spill (e.g. 2G; 0: a "
                      "quarter of the available memory)")
           ->transform(CLI::AsSizeValue(false));
       app.add_option("--temp-dir", a->temp_dir, "CSV input: folder for spilled group states (default $TMPDIR)");
       app.add_flag("--quiet", a->quiet, "No progress on stderr");
       tandem::cli::add_distributed_options(app, a->distributed, &a->gather);
       return [a] { return a->keys.empty() ? run_table(*a) : run_key_value_files(*a); };
     }});

}  // namespace
