// tandem sort: sort a raw or .npy array file (keys, optionally with values), a CSV table by key
// columns (a CSV input or --by: sort_table.hpp), or print the hybrid bitonic plan (--plan).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "distributed.hpp"
#include "options.hpp"
#include "sort_table.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/sort.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/sort/bitonic_plan.hpp"

namespace {

struct Args {
  // --plan
  bool plan{false};
  std::uint64_t n{0};
  double k{-1};
  std::string policy{"c"};
  int min_interior_run{-1};
  bool json{false};
  // file mode
  std::string type, in, out, values, values_out, values_type{"u32"};
  bool descending{false};
  std::string device{"auto"}, algorithm{"auto"}, memory{"auto"};
  std::uint64_t gpu_memory_limit{0};
  int gpu_sm_limit{0};
  std::string tune_signal{"time"};
  int threads{0};
  std::vector<int> gpus;
  bool explain{false};
  bool distributed{false};
  // table form
  std::string table, by, nulls{"last"}, schema;
  std::int64_t limit{-1};
  std::uint64_t memory_limit{0};
  std::string temp_dir;
};

// The table form: a CSV input or --by. The array form's own options are refused there.
int run_table(const Args& a) {
  if (a.plan || !a.type.empty() || !a.in.empty() || !a.values.empty() || a.distributed)
    throw tandem::UsageError(
        "sorting a CSV table takes a CSV file and --by, not --plan, --type, --in, --values or --distributed");
  tandem::cli::TableSortArgs t{a.table, a.by, a.nulls, std::nullopt, a.schema, a.out, a.threads, a.explain, 0, {}};
  if (a.limit >= 0) t.limit = static_cast<std::uint64_t>(a.limit);
  t.memory_limit = a.memory_limit;
  t.temp_dir = a.temp_dir;
  t.device = a.device;
  return tandem::cli::run_table_sort(t);
}

char parse_policy(const std::string& s) {
  if (s == "a" || s == "b" || s == "c") return s[0];
  throw tandem::UsageError(fmt::format("--policy must be a, b or c (got '{}')", s));
}

// Only the bitonic sort of one process (--algorithm bitonic or --device hybrid, not --device cpu) spreads over
// several GPUs; everywhere else --gpus would be ignored, so it is refused.
void check_gpus_used(const Args& a, const tandem::SortOptions& o) {
  if (a.gpus.empty()) return;
  auto refuse = [](std::string_view where) {
    throw tandem::UsageError(
        fmt::format("--gpus has no effect {}: only the bitonic sort of one process "
                    "(--algorithm bitonic or --device hybrid) runs on several GPUs",
                    where));
  };
  if (a.plan) refuse("with --plan");
  if (a.distributed) refuse("with --distributed (one GPU per rank)");
  if (o.algorithm != tandem::SortAlgorithm::bitonic && o.device != tandem::Device::hybrid)
    refuse("outside the bitonic sort (the other paths run on one GPU)");
  if (o.device == tandem::Device::cpu) refuse("with --device cpu");
}

int run_plan(const Args& a) {
  check_gpus_used(a, {});
  if (a.k < 0) throw tandem::UsageError("--plan needs --k (the CPU/GPU capability ratio, >= 0)");
  const auto p = tandem::bitonic::make_plan(a.n, a.k, parse_policy(a.policy), a.min_interior_run);
  if (a.json) std::cout << tandem::bitonic::to_json(p).dump(2) << '\n';
  else std::cout << tandem::bitonic::describe(p);
  return 0;
}

// Where the sort writes its result: the buffers the inputs were read into (sorted in place), or,
// for mapped inputs, new memory the sort fills straight from the mapping (no copy of its own).
struct SortTargets {
  tandem::io::Array* keys{nullptr};
  tandem::io::Array* values{nullptr};
  tandem::io::Array fresh_keys, fresh_values;
  bool in_place{false};
};

// memory=low keeps the resident memory near the data's size: the input is read into the buffer
// it is sorted in, since a mapping's pages count as resident beside new memory for the result.
tandem::io::MappedArray read_input(const std::string& path, tandem::DType t, const tandem::SortOptions& o) {
  if (o.memory == tandem::SortMemory::low) return tandem::io::holding(tandem::io::read_array(path, t, o.threads));
  return tandem::io::map_array(path, t, o.threads);
}

void fresh_like(const tandem::io::MappedArray& in, tandem::io::Array& out) {
  out.dtype = in.dtype;
  out.count = in.count;
  out.bytes = tandem::io::ByteBuffer(in.bytes());  // not zeroed: the sort writes every element
}

void choose_targets(const tandem::io::MappedArray& keys, const tandem::io::MappedArray* values, SortTargets& t) {
  t.in_place = keys.read_buffer && (!values || values->read_buffer);
  if (t.in_place) {
    t.keys = keys.read_buffer.get();
    t.values = values ? values->read_buffer.get() : nullptr;
    return;
  }
  fresh_like(keys, t.fresh_keys);
  t.keys = &t.fresh_keys;
  if (values) {
    fresh_like(*values, t.fresh_values);
    t.values = &t.fresh_values;
  }
}

template <class K, class V>
tandem::Report sort_pairs_into(const tandem::io::MappedArray& keys, const tandem::io::MappedArray& values,
                               SortTargets& t, const tandem::SortOptions& o) {
  auto ks = t.keys->as<K>();
  auto vs = t.values->as<V>();
  if (t.in_place) return tandem::sort_pairs(ks, vs, o);
  return tandem::sort_pairs_copy(keys.as<K>(), values.as<V>(), ks, vs, o);
}

template <class K>
tandem::Report sort_arrays(const tandem::io::MappedArray& keys, const tandem::io::MappedArray* values, SortTargets& t,
                           const tandem::SortOptions& o) {
  if (!values)
    return t.in_place ? tandem::sort(t.keys->as<K>(), o) : tandem::sort_copy(keys.as<K>(), t.keys->as<K>(), o);
  if (values->dtype == tandem::DType::u32) return sort_pairs_into<K, std::uint32_t>(keys, *values, t, o);
  return sort_pairs_into<K, std::uint64_t>(keys, *values, t, o);
}

#if TANDEM_HAS_MPI
// Keys (and values) as vectors: the distributed sort gives each rank a slice of a new length.
// Copied from the mapped file: the only fresh memory is the vector's.
template <class T>
std::vector<T> to_vector(const tandem::io::MappedArray& a) {
  const auto s = a.as<T>();
  return std::vector<T>(s.begin(), s.end());
}

// Each rank reads its input (its own file, or its part of a shared one), the ranks sort
// together, and each writes its slice of the global order; the files appear only when every
// rank's were written.
int run_distributed(const Args& a, const tandem::SortOptions& o, tandem::DType t, tandem::DType vt) {
  auto& ctx = tandem::cli::mpi_context();
  const std::string out = tandem::cli::rank_output(ctx, a.out, false, false);
  const std::string values_out = a.values_out.empty() ? "" : tandem::cli::rank_output(ctx, a.values_out, false, false);
  std::optional<tandem::io::AtomicOutput> keys_file, values_file;
  ctx.run_agreed([&] {
    keys_file.emplace(out);
    if (!values_out.empty()) values_file.emplace(values_out);
  });
  tandem::Stopwatch total;
  tandem::io::MappedArray keys = tandem::cli::read_rank_array(ctx, a.in, t);
  std::optional<tandem::io::MappedArray> values;
  if (!a.values.empty()) values = tandem::cli::read_rank_array(ctx, a.values, vt);
  ctx.run_agreed([&] {
    if (values && values->count != keys.count)
      throw tandem::InputError(fmt::format(
          "{}: {} values for {} keys in {}", tandem::dist::expand_rank_path(a.values, ctx.rank(), ctx.size()),
          values->count, keys.count, tandem::dist::expand_rank_path(a.in, ctx.rank(), ctx.size())));
  });
  const double read_s = total.seconds();
  tandem::dist::DistReport r = tandem::visit_dtype(t, [&](auto tag) -> tandem::dist::DistReport {
    using K = decltype(tag);
    if constexpr (std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::int32_t> ||
                  std::is_same_v<K, std::uint64_t> || std::is_same_v<K, std::int64_t> || std::is_same_v<K, float> ||
                  std::is_same_v<K, double>) {
      auto k = to_vector<K>(keys);
      keys = {};
      auto write_keys = [&] { tandem::io::write_array(*keys_file, t, k.data(), k.size()); };
      // Pairs: the values as `V` (u32 or u64), sorted along and written beside the keys.
      auto sort_pairs_as = [&](auto value_tag) {
        auto v = to_vector<decltype(value_tag)>(*values);
        auto rep = tandem::dist::sort_pairs(ctx, k, v, o);
        tandem::cli::write_then_commit(
            ctx, [&] { write_keys(), tandem::io::write_array(*values_file, vt, v.data(), v.size()); }, &*keys_file,
            &*values_file);
        return rep;
      };
      if (values && vt == tandem::DType::u32) return sort_pairs_as(std::uint32_t{});
      if (values) return sort_pairs_as(std::uint64_t{});
      auto rep = tandem::dist::sort(ctx, k, o);
      tandem::cli::write_then_commit(ctx, write_keys, &*keys_file);
      return rep;
    } else {
      throw tandem::UsageError("unsupported key type");
    }
  });
  tandem::cli::print_notices(r.report);
  if (a.explain && ctx.rank() == 0)
    std::cerr << ctx.describe() << '\n'
              << r.report.explain()
              << fmt::format("  read {}; {} keys on rank 0, {} in all (files included)\n",
                             tandem::human_seconds(read_s), r.count_out, tandem::human_seconds(total.seconds()));
  return 0;
}
#else
int run_distributed(const Args&, const tandem::SortOptions&, tandem::DType, tandem::DType) {
  tandem::cli::require_mpi();
  return 2;
}
#endif

// --memory-limit: the files sorted within the limit, by runs when they do not fit (tandem::sort_files).
int run_by_runs(const Args& a, const tandem::SortOptions& o, tandem::DType t, tandem::DType vt) {
  if (a.in == "-" || a.out == "-" || a.values_out == "-")
    throw tandem::UsageError("--memory-limit sorts files: --in, --out and --values-out must name files, not '-'");
  tandem::Stopwatch total;
  tandem::Report r = tandem::sort_files({a.in, a.values, a.out, a.values_out, t, vt}, o, {a.memory_limit, a.temp_dir});
  tandem::cli::print_notices(r);
  if (a.explain)
    std::cout << r.explain() << fmt::format("  {} in all (files included)\n", tandem::human_seconds(total.seconds()));
  return 0;
}

int run_file(const Args& a) {
  if (a.type.empty()) throw tandem::UsageError("sort needs --type (u32, i32, u64, i64, f32 or f64) or --plan");
  if (a.in.empty() || a.out.empty()) throw tandem::UsageError("sort needs --in FILE and --out FILE");
  if (a.values.empty() != a.values_out.empty()) throw tandem::UsageError("--values and --values-out go together");
  const tandem::DType t = tandem::parse_dtype(a.type);
  const tandem::DType vt = tandem::parse_dtype(a.values_type);
  if (vt != tandem::DType::u32 && vt != tandem::DType::u64)
    throw tandem::UsageError(fmt::format("--values-type must be u32 or u64 (got {})", a.values_type));
  switch (t) {
    case tandem::DType::u32:
    case tandem::DType::i32:
    case tandem::DType::u64:
    case tandem::DType::i64:
    case tandem::DType::f32:
    case tandem::DType::f64: break;
    default:
      throw tandem::UsageError(
          fmt::format("sort keys of type {} are not supported (u32, i32, u64, i64, f32, f64)", a.type));
  }
  tandem::SortOptions o;
  o.algorithm = tandem::parse_sort_algorithm(a.algorithm);
  o.device = tandem::parse_device(a.device);
  o.memory = tandem::parse_sort_memory(a.memory);
  o.descending = a.descending;
  o.bitonic.policy = parse_policy(a.policy);
  o.bitonic.min_interior_run = a.min_interior_run;
  o.bitonic.k = a.k;
  o.gpu_memory_limit = a.gpu_memory_limit;
  o.bitonic.gpu_sm_limit = a.gpu_sm_limit;
  o.bitonic.tune_signal = tandem::parse_tune_signal(a.tune_signal);
  o.threads = a.threads;
  if (::isatty(2))
    o.progress = [](std::string_view line) {  // long out-of-core sorts, on a terminal only
      if (line.empty()) std::cerr << "\r\033[K";
      else std::cerr << "\rtandem sort: " << line << "\033[K";
    };
  check_gpus_used(a, o);
  o.bitonic.gpus = a.gpus;

  if (a.distributed) {
    if (a.memory_limit || !a.temp_dir.empty())
      throw tandem::UsageError(
          "--memory-limit and --temp-dir do not apply to --distributed (each rank sorts in memory)");
    return run_distributed(a, o, t, vt);
  }
  if (a.memory_limit || !a.temp_dir.empty()) return run_by_runs(a, o, t, vt);
  // Unwritable or clashing destinations fail before anything is read or sorted; nothing is created yet.
  tandem::io::AtomicOutput keys_out(a.out);
  std::optional<tandem::io::AtomicOutput> values_out;
  if (!a.values_out.empty()) {
    values_out.emplace(a.values_out);
    if (keys_out.same_destination(*values_out))
      throw tandem::UsageError(fmt::format("--out and --values-out name the same destination ({})", a.out));
  }
  tandem::Stopwatch total;
  const tandem::io::MappedArray keys = read_input(a.in, t, o);
  std::optional<tandem::io::MappedArray> values;
  if (!a.values.empty()) {
    values = read_input(a.values, vt, o);
    if (values->count != keys.count)
      throw tandem::InputError(
          fmt::format("{}: {} values for {} keys in {}", a.values, values->count, keys.count, a.in));
  }
  const double read_s = total.seconds();
  const tandem::io::MappedArray* vp = values ? &*values : nullptr;
  SortTargets out;
  choose_targets(keys, vp, out);
  tandem::Report r = tandem::visit_dtype(t, [&](auto tag) -> tandem::Report {
    using K = decltype(tag);
    if constexpr (std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::int32_t> ||
                  std::is_same_v<K, std::uint64_t> || std::is_same_v<K, std::int64_t> || std::is_same_v<K, float> ||
                  std::is_same_v<K, double>) {
      return sort_arrays<K>(keys, vp, out, o);
    } else {
      throw tandem::UsageError("unsupported key type");
    }
  });
  tandem::cli::print_notices(r);
  tandem::Stopwatch written;
  tandem::io::write_array(keys_out, t, out.keys->bytes.data(), out.keys->count, a.threads);
  if (values) {
    tandem::io::write_array(*values_out, vt, out.values->bytes.data(), out.values->count, a.threads);
    tandem::io::AtomicOutput::commit_all({&keys_out, &*values_out});  // both appear, or neither
  } else {
    keys_out.commit();
  }
  if (a.explain) {
    const std::size_t bytes = keys.bytes() + (values ? values->bytes() : 0);
    r.stages.insert(r.stages.begin(),
                    tandem::Stage{"read input", "cpu", read_s,
                                  fmt::format("{}, {}", tandem::human_bytes(bytes),
                                              out.in_place ? "read into memory" : "mapped; the sort reads the pages")});
    r.add("write output", "cpu", written.seconds(),
          fmt::format("{}, then renamed into place", tandem::human_bytes(bytes)));
    std::ostream& os = a.out == "-" || a.values_out == "-" ? std::cerr : std::cout;
    os << r.explain()
       << fmt::format("  {} keys, {} in all (files included)\n", keys.count, tandem::human_seconds(total.seconds()));
  }
  return 0;
}

const bool registered = tandem::cli::register_command(
    {"sort",
     "Sort a CSV table by key columns (sort data.csv --by id3,v3:desc --out s.csv), an array file (raw "
     "little-endian or .npy), or print the hybrid bitonic plan (--plan)",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_flag("--plan", a->plan, "Print the hybrid CPU+GPU bitonic step plan instead of sorting");
       app.add_option("--n", a->n, "--plan: number of elements (padded to a power of two)")
           ->check(tandem::cli::in_range<std::uint64_t>(0, std::uint64_t{1} << 62));
       app.add_option("--k", a->k, "CPU/GPU capability ratio (--plan: required; sorting: measured when absent)")
           ->check(tandem::cli::in_range(0.0, 1e12));
       app.add_option("--policy", a->policy, "CPU share policy: a (k/(1+k)), b (1/2^(N+1)) or c (1/2^N)")
           ->capture_default_str();
       app.add_option("--min-interior-run", a->min_interior_run,
                      "Interior concurrent runs shorter than this run on the faster device (default: cost model)")
           ->check(tandem::cli::in_range(0, 1 << 20));
       app.add_flag("--json", a->json, "--plan: print JSON");
       app.add_option("--type", a->type, "Key type: u32, i32, u64, i64, f32, f64");
       app.add_option("--in", a->in, "Input keys (raw or .npy; - for stdin)");
       app.add_option("--out", a->out, "Sorted keys (raw or .npy by name; - for stdout)");
       app.add_option("--values", a->values, "Values carried with the keys (raw or .npy)");
       app.add_option("--values-out", a->values_out, "Where the permuted values go");
       app.add_option("--values-type", a->values_type, "Value type: u32 or u64")->capture_default_str();
       app.add_flag("--descending", a->descending, "Sort in descending order");
       app.add_option("--device", a->device, "auto, cpu, gpu or hybrid (a CSV table: auto, cpu or gpu)")
           ->capture_default_str();
       app.add_option("--algorithm", a->algorithm, "auto, bitonic, radix or merge")->capture_default_str();
       app.add_option("--memory", a->memory,
                      "CPU sort memory: fast (a scratch copy: peak 2.0x the data), low (sorted in place with a "
                      "scratch of at most 1/16: peak <= 1.07x, slower), auto (fast unless its scratch does not fit "
                      "in free memory)")
           ->check(CLI::IsMember({"auto", "fast", "low"}))
           ->capture_default_str();
       app.add_option("--gpu-memory-limit", a->gpu_memory_limit,
                      "Bytes of GPU memory the sort may use (0: what is free)")
           ->check(tandem::cli::in_range<std::uint64_t>(0, std::uint64_t{1} << 50));
       app.add_option("--gpu-sm-limit", a->gpu_sm_limit, "Bitonic: launch on at most this many SMs (0: all)")
           ->check(tandem::cli::in_range(0, 1 << 16));
       app.add_option("--tune-signal", a->tune_signal,
                      "Bitonic: what the GPU launch shape is tuned by: time (every shape timed) or counters "
                      "(ALU utilisation over shared-memory bank-conflict cost, CUPTI; time where counters cannot "
                      "be read)")
           ->check(CLI::IsMember({"time", "counters"}))
           ->capture_default_str();
       app.add_option("--threads", a->threads, "CPU threads (0: physical cores)")
           ->check(tandem::cli::in_range(0, tandem::cli::kMaxThreads));
       app.add_option("--gpus", a->gpus,
                      "Bitonic: GPUs sharing the work, e.g. 0,1 (repeats: 0,0 = two shares on GPU 0)")
           ->delimiter(',')
           ->check(tandem::cli::in_range(0, 1023));
       app.add_flag("--explain", a->explain, "Print what ran where, with the plan and the time of each stage");
       tandem::cli::add_distributed_options(app, a->distributed);
       app.add_option("table", a->table, "Table form: CSV file with a header row ('-' for standard input)");
       app.add_option("--by", a->by, "Table form: key columns, each optionally :asc or :desc (e.g. id3,v3:desc)");
       app.add_option("--nulls", a->nulls, "Table form: missing values first or last (either direction)")
           ->capture_default_str();
       app.add_option("--limit", a->limit, "Table form: only the first K rows of the order")
           ->check(tandem::cli::in_range<std::int64_t>(0, std::int64_t{1} << 62));
       app.add_option("--schema", a->schema, "Table form: CSV column types, e.g. id1:str,v1:i64 (others inferred)");
       app.add_option("--memory-limit", a->memory_limit,
                      "Bytes the sort may hold (e.g. 2G; table form: 0 is half of the available memory); a larger "
                      "input is sorted by runs in temporary files and a merge")
           ->transform(CLI::AsSizeValue(false));
       app.add_option("--temp-dir", a->temp_dir, "Folder for the sorted runs (default $TMPDIR)");
       app.footer(
           "Peak memory (resident, over the input's size; the input is read straight into the sorted buffer):\n"
           "  cpu-radix (--algorithm radix/auto on the CPU)  2.0x  (keys and values each get a scratch copy)\n"
           "  cpu-comparison (--algorithm merge)             2.0x keys, 3.5x pairs\n"
           "  cpu-in-place (--memory low)                    <= 1.07x (scratch at most 1/16 of keys and values)\n"
           "  bitonic on the CPU                             2.0x keys, 2.5x pairs (padded to a power of two)\n"
           "  gpu-pipeline                                   1.0x on the host; gpu-out-of-core 2.0x\n"
           "  --memory-limit L                               at most L: sorted whole when twice the data fits, else\n"
           "                                                 in runs of L/2 written to --temp-dir and merged\n"
           "Inputs that are not sized files (pipes, standard input) add up to 1.0x while they are read.");
       return [a] {
         if (!a->table.empty() || !a->by.empty()) return run_table(*a);
         if (a->plan && (a->memory_limit || !a->temp_dir.empty()))
           throw tandem::UsageError("--memory-limit and --temp-dir sort files; --plan sorts nothing");
         return a->plan ? run_plan(*a) : run_file(*a);
       };
     }});

// `tandem demo`: the hybrid bitonic plan of the 16-element example (k = 0.6), then a real sort. Without a GPU
// the plan is shown and the CPU path runs.
const bool demo = tandem::cli::register_demo_part(
    {30, "hybrid sort", [] {
       const auto example = tandem::bitonic::make_plan(16, 0.6, 'c');
       std::cout << "example (16 elements, k = 0.6): policy c concurrent at " << example.concurrent_ranges()
                 << "; policy b at " << tandem::bitonic::make_plan(16, 0.6, 'b').concurrent_ranges() << "; policy a at "
                 << tandem::bitonic::make_plan(16, 0.6, 'a').concurrent_ranges() << '\n';
       const std::size_t n = tandem::gpu_count() > 0 ? (std::size_t{1} << 24) + 12345 : (std::size_t{1} << 20) + 12345;
       std::mt19937_64 rng(42);
       std::vector<std::uint32_t> keys(n);
       for (auto& k : keys) k = static_cast<std::uint32_t>(rng());
       auto want = keys;
       tandem::Stopwatch sw;
       std::sort(want.begin(), want.end());
       const double t_std = sw.seconds();
       bool ok = true;
       auto run = [&](tandem::SortOptions o, const char* what) {
         auto v = keys;
         tandem::Stopwatch w;
         auto r = tandem::bitonic::sort(std::span<std::uint32_t>(v), o);
         const double t = w.seconds();
         const bool good = v == want;
         ok = ok && good;
         std::cout << fmt::format("-- {}: {} keys in {} ({}), std::sort {}\n", what, n, tandem::human_seconds(t),
                                  good ? "matches std::sort" : "MISMATCH", tandem::human_seconds(t_std));
         std::cout << r.explain();
       };
       tandem::SortOptions o;
       o.algorithm = tandem::SortAlgorithm::bitonic;
       if (tandem::gpu_count() == 0) {
         std::cout << "no GPU: the plan below would split the work; the CPU runs every step\n"
                   << tandem::bitonic::describe(tandem::bitonic::make_plan(n, 0.6, 'c', 3));
         o.device = tandem::Device::cpu;
         run(o, "CPU bitonic");
         return ok;
       }
       o.device = tandem::Device::auto_;
       run(o, "bitonic, k measured (the cost model picks the split)");
       o.device = tandem::Device::hybrid;
       o.bitonic.k = 0.6;
       o.bitonic.min_interior_run = 3;
       run(o, "hybrid with k forced to 0.6 (policy c, min_interior_run 3)");
       return ok;
     }});

}  // namespace
