// tandem gen topk: ranked lists for top-k queries (TKL1 files).
#include <iostream>

#include <fmt/format.h>

#include "command.hpp"
#include "options.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/topk.hpp"

namespace {

struct Args {
  std::uint64_t objects{1000};
  std::uint32_t lists{4};
  std::string dist{"uniform"};
  std::uint64_t seed{1};
  std::string out;
};

const bool registered = tandem::cli::register_generator(
    {"topk", "Ranked lists (TKL1) for top-k queries: uniform, correlated, anticorrelated or zipf scores",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_option("--objects,-m", a->objects, "Objects (entries per list)")
           ->required()
           ->check(tandem::cli::in_range<std::uint64_t>(1, std::uint64_t{1} << 32));
       app.add_option("--lists,-n", a->lists, "Lists (1..64)")
           ->capture_default_str()
           ->check(tandem::cli::in_range<std::uint32_t>(1, tandem::topk::kMaxLists));
       app.add_option("--dist", a->dist, "uniform | correlated | anticorrelated | zipf")->capture_default_str();
       app.add_option("--seed", a->seed, "Random seed (same seed, same file)")
           ->capture_default_str()
           ->check(tandem::cli::in_range<std::uint64_t>(0, UINT64_MAX));
       app.add_option("--out,-o", a->out, "Output file ('-' for standard output)")->required();
       return [a] {
         tandem::topk::GenOptions o;
         o.objects = a->objects;
         o.lists = a->lists;
         o.dist = tandem::topk::parse_dist(a->dist);
         o.seed = a->seed;
         tandem::Stopwatch w;
         const auto l = tandem::topk::generate(o);
         tandem::topk::write_lists(a->out, l);
         if (a->out != "-")
           std::cerr << fmt::format("wrote {}: {} lists x {} objects, {} ({}), {}\n", a->out, l.n, l.m,
                                    tandem::topk::to_string(o.dist), tandem::human_bytes(16 + l.entries.size() * 8),
                                    tandem::human_seconds(w.seconds()));
         return 0;
       };
     }});

}  // namespace
