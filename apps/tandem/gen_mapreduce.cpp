// `tandem gen zipf` and `tandem gen text`, and the word count / group-by parts of `tandem demo`.
#include <iostream>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "command.hpp"
#include "options.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/groupby.hpp"
#include "tandem/mapreduce.hpp"

namespace {

struct ZipfArgs {
  std::size_t n{1 << 20};
  std::uint64_t distinct{1 << 20};
  double exponent{1.0};
  std::uint64_t seed{1};
  std::string type{"u32"}, out, values, value_type{"f64"};
};

// Writes the Zipf keys into `out` (not yet committed).
void write_zipf_keys(tandem::io::AtomicOutput& out, const ZipfArgs& a, tandem::DType kt) {
  if (kt == tandem::DType::u32 || kt == tandem::DType::i32) {
    const auto k = tandem::mapreduce::zipf_keys_u32(a.n, a.distinct, a.exponent, a.seed);
    tandem::io::write_array(out, kt, k.data(), k.size());
  } else {
    const auto k = tandem::mapreduce::zipf_keys_u64(a.n, a.distinct, a.exponent, a.seed);
    tandem::io::write_array(out, kt, k.data(), k.size());
  }
}

// Writes values uniform in [0, 1000) into `out` (not yet committed).
void write_zipf_values(tandem::io::AtomicOutput& out, const ZipfArgs& a, tandem::DType vt) {
  const auto r = tandem::mapreduce::zipf_ranks(a.n, 1000000, 0.0, a.seed + 17);
  tandem::visit_dtype(vt, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                  std::is_same_v<T, std::int64_t>) {
      std::vector<T> v(a.n);
      for (std::size_t i = 0; i < a.n; ++i) v[i] = static_cast<T>(double(r[i]) / 1000.0);
      tandem::io::write_array(out, vt, v.data(), v.size());
    }
  });
}

// --exponent and --seed of both Zipf generators.
void add_exponent_and_seed(CLI::App& app, double& exponent, std::uint64_t& seed) {
  using tandem::cli::in_range;
  app.add_option("--exponent", exponent, "Zipf exponent s (0: uniform)")
      ->capture_default_str()
      ->check(in_range(0.0, 1000.0));
  app.add_option("--seed", seed, "Random seed")->capture_default_str()->check(in_range<std::uint64_t>(0, UINT64_MAX));
}

const bool gen_zipf = tandem::cli::register_generator(
    {"zipf", "Zipf-distributed integer keys (and optional random values) for group-by",
     [](CLI::App& app) -> std::function<int()> {
       using tandem::cli::in_range;
       auto a = std::make_shared<ZipfArgs>();
       app.add_option("--n", a->n, "Number of keys")
           ->capture_default_str()
           ->check(in_range<std::size_t>(0, std::size_t{1} << 40));
       app.add_option("--distinct", a->distinct, "Number of distinct keys")
           ->capture_default_str()
           ->check(in_range<std::uint64_t>(1, std::uint64_t{1} << 32));
       add_exponent_and_seed(app, a->exponent, a->seed);
       app.add_option("--type", a->type, "Key type: u32, u64, i32 or i64")->capture_default_str();
       app.add_option("--out", a->out, "Keys file (raw, or .npy by suffix)")->required();
       app.add_option("--values", a->values, "Also write a values file (uniform in [0, 1000))");
       app.add_option("--value-type", a->value_type, "f32, f64, i32 or i64")->capture_default_str();
       return [a] {
         const auto kt = tandem::parse_dtype(a->type);
         if (kt != tandem::DType::u32 && kt != tandem::DType::i32 && kt != tandem::DType::u64 &&
             kt != tandem::DType::i64)
           throw tandem::UsageError(fmt::format("--type {}: expected u32, u64, i32 or i64", a->type));
         const auto vt = tandem::parse_dtype(a->value_type);
         if (vt != tandem::DType::f32 && vt != tandem::DType::f64 && vt != tandem::DType::i32 &&
             vt != tandem::DType::i64)
           throw tandem::UsageError(fmt::format("--value-type {}: expected f32, f64, i32 or i64", a->value_type));
         tandem::io::AtomicOutput keys_out(a->out);
         if (a->values.empty()) {
           write_zipf_keys(keys_out, *a, kt);
           keys_out.commit();
           return 0;
         }
         tandem::io::AtomicOutput values_out(a->values);
         if (keys_out.same_destination(values_out))
           throw tandem::UsageError(fmt::format("--out and --values name the same destination ({})", a->out));
         write_zipf_keys(keys_out, *a, kt);
         write_zipf_values(values_out, *a, vt);
         tandem::io::AtomicOutput::commit_all({&keys_out, &values_out});  // both appear, or neither
         return 0;
       };
     }});

struct TextArgs {
  std::size_t bytes{1 << 20}, vocab{10000};
  double exponent{1.0};
  std::uint64_t seed{1};
  std::string out;
};

const bool gen_text = tandem::cli::register_generator(
    {"text", "Text whose words follow a Zipf law over a generated vocabulary (for wordcount)",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<TextArgs>();
       using tandem::cli::in_range;
       app.add_option("--bytes", a->bytes, "Size of the text")
           ->capture_default_str()
           ->check(in_range<std::size_t>(0, std::size_t{1} << 40));
       app.add_option("--vocab", a->vocab, "Distinct words in the vocabulary")
           ->capture_default_str()
           ->check(in_range<std::size_t>(1, std::size_t{1} << 32));
       add_exponent_and_seed(app, a->exponent, a->seed);
       app.add_option("--out", a->out, "Output file ('-' for standard output)")->required();
       return [a] {
         tandem::io::AtomicOutput out(a->out);  // checks the destination; the file is created when written
         const auto vocab = tandem::mapreduce::make_vocabulary(a->vocab, a->seed);
         const auto t = tandem::mapreduce::zipf_text(a->bytes, vocab, a->exponent, a->seed);
         out.stream().write(t.data(), static_cast<std::streamsize>(t.size()));
         out.commit();
         return 0;
       };
     }});

const bool demo_wc = tandem::cli::register_demo_part(
    {50, "word count", [] {
       const auto vocab = tandem::mapreduce::make_vocabulary(20000, 5);
       const auto text = tandem::mapreduce::zipf_text(std::size_t{16} << 20, vocab, 1.0, 5);
       tandem::Stopwatch w;
       auto r = tandem::mapreduce::wordcount(text);
       const double t = w.seconds();
       std::unordered_map<std::string_view, std::uint64_t> ref;
       tandem::mapreduce::for_each_word(text.data(), text.size(), 0, text.size(), [&](std::size_t b, std::size_t n) {
         ++ref[std::string_view(text.data() + b, n)];
       });
       bool ok = ref.size() == r.words.size();
       for (const auto& [wd, c] : r.words) ok = ok && ref.count(wd) && ref[wd] == c;
       std::cout << r.report.explain();
       std::cout << fmt::format(
           "word count of {} Zipf text: {} words, {} distinct, {} ({}); top word '{}' x{}; {} std::unordered_map "
           "reference\n",
           tandem::human_bytes(text.size()), r.total_words, r.words.size(), tandem::human_seconds(t),
           tandem::human_rate(text.size() / t, "B"), r.words.empty() ? "" : r.words[0].first,
           r.words.empty() ? 0 : r.words[0].second, ok ? "matches the" : "DIFFERS FROM the");
       return ok;
     }});

const bool demo_gb = tandem::cli::register_demo_part(
    {51, "group-by", [] {
       const std::size_t n = std::size_t{1} << 22;
       const auto keys = tandem::mapreduce::zipf_keys_u32(n, 100000, 1.0, 9);
       std::vector<double> vals(n);
       for (std::size_t i = 0; i < n; ++i) vals[i] = double(i % 1000);
       tandem::Table input;
       input.add(tandem::make_column("key", keys));
       input.add(tandem::make_column("value", vals));
       tandem::Stopwatch w;
       auto g = tandem::groupby(input, {{"key"}, tandem::parse_aggregations("sum(value) as sum,count() as count")});
       const double t = w.seconds();
       std::unordered_map<std::uint32_t, std::pair<double, std::uint64_t>> ref;
       for (std::size_t i = 0; i < n; ++i) {
         auto& e = ref[keys[i]];
         e.first += vals[i];
         ++e.second;
       }
       const auto k = g.table.column("key").numbers<std::uint32_t>();
       const auto sums = g.table.column("sum").numbers<double>();
       const auto counts = g.table.column("count").numbers<std::int64_t>();
       bool ok = ref.size() == k.size();
       for (std::size_t i = 0; ok && i < k.size(); ++i) {
         auto it = ref.find(k[i]);
         ok = it != ref.end() && it->second.second == std::uint64_t(counts[i]) && it->second.first == sums[i];
       }
       std::cout << g.report.explain();
       std::cout << fmt::format(
           "group-by sum,count of {} u32 keys (Zipf 1.0 over 100000) with f64 values: {} groups, {} ({}); {} "
           "std::unordered_map reference\n",
           n, k.size(), tandem::human_seconds(t), tandem::human_rate(n / t, "keys"),
           ok ? "matches the" : "DIFFERS FROM the");
       return ok;
     }});

}  // namespace
