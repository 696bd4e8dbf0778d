// tandem wordcount: word frequencies of text files on the CPU or the GPU (MapReduce).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include <optional>

#include "command.hpp"
#include "distributed.hpp"
#include "options.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/mapreduce.hpp"

namespace {

struct Args {
  std::vector<std::string> files;
  std::size_t top{0};
  std::string out{"-"};
  bool lowercase{false};
  std::string device{"auto"};
  bool explain{false};
  bool distributed{false}, gather{false};
};

void write_words(std::ostream& os, const std::vector<std::pair<std::string, std::uint64_t>>& words, std::size_t top) {
  const std::size_t n = top ? std::min(top, words.size()) : words.size();
  std::string line;
  for (std::size_t i = 0; i < n; ++i) {
    line.assign(words[i].first);
    line += '\t';
    line += fmt::format("{}\n", words[i].second);
    os << line;
  }
}

#if TANDEM_HAS_MPI
int run_distributed(const Args& a, const tandem::mapreduce::WordCountOptions& o) {
  auto& ctx = tandem::cli::mpi_context();
  if (a.files.size() != 1) throw tandem::UsageError("--distributed counts one file (or one {rank} file per rank)");
  if (a.top && !a.gather)
    throw tandem::UsageError("--top needs --gather with --distributed (the counts are partitioned)");
  const std::string out = tandem::cli::rank_output(ctx, a.out, a.gather);
  std::optional<tandem::io::AtomicOutput> file;
  ctx.run_agreed([&] {
    if (!out.empty()) file.emplace(out);
  });
  tandem::Stopwatch w;
  const tandem::io::CharBuffer text = tandem::cli::read_rank_text(ctx, a.files[0]);
  const double read_s = w.seconds();
  auto r = tandem::dist::wordcount(ctx, std::string_view(text.data(), text.size()), o, a.gather);
  tandem::cli::print_notices(r.report.report);
  tandem::cli::write_then_commit(
      ctx,
      [&] {
        if (file) write_words(file->stream(), r.words, a.top);
      },
      file ? &*file : nullptr);
  if (a.explain && ctx.rank() == 0)
    std::cerr << ctx.describe() << '\n'
              << r.report.report.explain()
              << fmt::format("  read {}; {} words in all, {} distinct on rank 0\n", tandem::human_seconds(read_s),
                             r.total_words, r.words.size());
  return 0;
}
#endif

const bool registered = tandem::cli::register_command(
    {"wordcount", "Count words (runs of letters, digits, ' _ and UTF-8 bytes) in text files",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_option("files", a->files, "Text files ('-' for standard input)")->required();
       app.add_option("--top", a->top, "Print only the N most frequent words (0: all)")
           ->check(tandem::cli::in_range<std::size_t>(0, std::size_t{1} << 40));
       app.add_option("--out", a->out, "Output file (word<TAB>count lines; '-' for standard output)")
           ->capture_default_str();
       app.add_flag("--lowercase", a->lowercase, "Fold ASCII letters to lower case first");
       app.add_option("--device", a->device, "auto, cpu or gpu")->capture_default_str();
       app.add_flag("--explain", a->explain,
                    "Print what ran where, the GPU engine's parameters and hit counts (stderr)");
       tandem::cli::add_distributed_options(app, a->distributed, &a->gather);
       return [a] {
         tandem::mapreduce::WordCountOptions o;
         o.lowercase = a->lowercase;
         o.engine.device = tandem::parse_device(a->device);
         if (a->distributed) {
           tandem::cli::require_mpi();
#if TANDEM_HAS_MPI
           return run_distributed(*a, o);
#endif
         }
         if (a->gather) throw tandem::UsageError("--gather goes with --distributed");
         tandem::io::AtomicOutput out(a->out);  // checks the destination; the file is created when written
         auto r = tandem::mapreduce::wordcount_files(a->files, o);
         tandem::cli::print_notices(r.report);
         write_words(out.stream(), r.words, a->top);
         out.commit();
         if (a->explain)
           std::cerr << r.report.explain() << fmt::format("  {} words, {} distinct\n", r.total_words, r.words.size());
         return 0;
       };
     }});

}  // namespace
