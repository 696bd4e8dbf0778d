// tandem wordcount: word frequencies of text files on the CPU or the GPU (MapReduce).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "command.hpp"
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
};

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
       return [a] {
         tandem::mr::WordCountOptions o;
         o.lowercase = a->lowercase;
         o.engine.device = tandem::parse_device(a->device);
         tandem::Stopwatch w;
         tandem::io::AtomicOutput out(a->out);  // checks the destination; the file is created when written
         tandem::io::CharBuffer text;
         for (std::size_t i = 0; i < a->files.size(); ++i) {
           auto bytes = tandem::io::read_bytes(a->files[i]);
           if (i == 0) {
             text = std::move(bytes);  // one file: counted in the buffer it was read into
             continue;
           }
           text.push_back('\n');  // words never join across files
           text.insert(text.end(), bytes.begin(), bytes.end());
         }
         const double read_s = w.seconds();
         auto r = tandem::mr::wordcount(std::string_view(text.data(), text.size()), o);
         tandem::cli::print_notices(r.report);
         r.report.stages.insert(r.report.stages.begin(),
                                {"read input", "cpu", read_s, tandem::human_bytes(text.size())});
         const std::size_t n = a->top ? std::min(a->top, r.words.size()) : r.words.size();
         auto& os = out.stream();
         std::string line;
         for (std::size_t i = 0; i < n; ++i) {
           line.assign(r.words[i].first);
           line += '\t';
           line += fmt::format("{}\n", r.words[i].second);
           os << line;
         }
         out.commit();
         if (a->explain)
           std::cerr << r.report.explain()
                     << fmt::format("  {} words, {} distinct, {}\n", r.total_words, r.words.size(),
                                    tandem::human_bytes(text.size()));
         return 0;
       };
     }});

}  // namespace
