// tandem groupby: aggregate a values column by a keys column (MapReduce engines).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/mapreduce.hpp"

namespace {

struct Args {
  std::string keys, values, key_type{"u32"}, value_type{"f64"}, agg{"sum,count"}, out{"-"}, device{"auto"}, engine{"auto"};
  bool explain{false};
};

const bool registered = tandem::cli::register_command({
    "groupby", "Group a values column by a keys column: sum, count, min, max, mean per key (CSV)",
    [](CLI::App& app) -> std::function<int()> {
      auto a = std::make_shared<Args>();
      app.add_option("--keys", a->keys, "Keys file (raw little-endian or .npy)")->required();
      app.add_option("--key-type", a->key_type, "u32, u64, i32 or i64")->capture_default_str();
      app.add_option("--values", a->values, "Values file (raw or .npy); optional when --agg is count");
      app.add_option("--value-type", a->value_type, "f32, f64, i32 or i64")->capture_default_str();
      app.add_option("--agg", a->agg, "Comma-separated aggregates, in output order: sum,count,min,max,mean")->capture_default_str();
      app.add_option("--out", a->out, "Output CSV ('-' for standard output)")->capture_default_str();
      app.add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
      app.add_option("--engine", a->engine,
                     "GPU engine: auto, hash (open addressing, hot keys in shared memory) or chained (per-block chained "
                     "tables, hot keys in a shared-memory pool; 'seed' is an older name for it)")
          ->capture_default_str();
      app.add_flag("--explain", a->explain, "Print what ran where, the GPU engine's parameters and hit counts (stderr)");
      return [a] {
        const auto aggs = tandem::mr::parse_aggs(a->agg);
        const auto kt = tandem::parse_dtype(a->key_type);
        const auto vt = tandem::parse_dtype(a->value_type);
        if (kt != tandem::DType::u32 && kt != tandem::DType::u64 && kt != tandem::DType::i32 && kt != tandem::DType::i64)
          throw tandem::UsageError(fmt::format("--key-type {}: expected u32, u64, i32 or i64", a->key_type));
        if (vt != tandem::DType::f32 && vt != tandem::DType::f64 && vt != tandem::DType::i32 && vt != tandem::DType::i64)
          throw tandem::UsageError(fmt::format("--value-type {}: expected f32, f64, i32 or i64", a->value_type));
        const bool has_values = !a->values.empty();
        for (auto g : aggs)
          if (g != tandem::mr::AggKind::count && !has_values)
            throw tandem::UsageError(fmt::format("--agg {} needs --values", tandem::mr::to_string(g)));
        tandem::mr::Options o;
        o.device = tandem::parse_device(a->device);
        if (a->engine == "auto") o.mode = tandem::mr::Options::Mode::auto_;
        else if (a->engine == "hash") o.mode = tandem::mr::Options::Mode::hash;
        else if (a->engine == "chained" || a->engine == "seed") o.mode = tandem::mr::Options::Mode::chained;
        else throw tandem::UsageError(fmt::format("--engine {}: expected auto, hash or chained", a->engine));
        tandem::Stopwatch w;
        auto keys = tandem::io::read_array(a->keys, kt);
        tandem::io::Array values;
        if (has_values) values = tandem::io::read_array(a->values, vt);
        const double read_s = w.seconds();
        if (has_values && values.count != keys.count)
          throw tandem::InputError(fmt::format("{} has {} keys but {} has {} values: the columns must have the same length",
                                               a->keys, keys.count, a->values, values.count));
        tandem::io::AtomicOutput out(a->out);
        auto g = tandem::mr::groupby(kt, keys.bytes.data(), keys.count, vt, has_values ? values.bytes.data() : nullptr,
                                     values.count, has_values, o);
        tandem::cli::print_notices(g.report);
        g.report.stages.insert(g.report.stages.begin(), {"read input", "cpu", read_s, fmt::format("{} keys", keys.count)});
        tandem::mr::write_groupby_csv(out.stream(), g, aggs);
        out.commit();
        if (a->explain) std::cerr << g.report.explain() << fmt::format("  {} rows, {} groups\n", keys.count, g.rows.size());
        return 0;
      };
    }});

}  // namespace
