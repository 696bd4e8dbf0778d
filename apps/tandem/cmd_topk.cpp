// tandem topk: the k best objects of ranked lists under a monotone aggregate (NRA, TA or full scan).
#include <charconv>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "distributed.hpp"
#include "options.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/topk.hpp"

namespace {

using namespace tandem;

struct Args {
  std::string lists;
  std::uint64_t k{0};
  std::string agg{"sum"};
  std::string algo{"auto"};
  std::string stride{"auto"};
  std::string device{"auto"};
  std::string memory{"device"};
  int threads{0};
  bool explain{false};
  bool json{false};
  bool distributed{false};
};

void print_items(const Args& a, const std::vector<topk::Item>& items) {
  if (a.json) {
    nlohmann::json res = nlohmann::json::array();
    for (const auto& it : items) res.push_back({{"id", it.id}, {"score", it.score}});
    std::cout << nlohmann::json({{"k", a.k}, {"results", res}}).dump() << '\n';
  } else {
    for (std::size_t i = 0; i < items.size(); ++i)
      std::cout << fmt::format("{}\t{}\t{}\n", i + 1, items[i].id, items[i].score);
  }
}

#if TANDEM_HAS_MPI
// --lists with {rank}: each rank's file holds every list over its own objects (rank r's object j
// is global object (objects of the ranks below) + j). Without {rank}: one file the ranks share,
// rank r keeping lists r, r + P, … (the lists held by different ranks, TPUT).
int run_distributed(const Args& a, const topk::Options& o) {
  auto& ctx = cli::mpi_context();
  Stopwatch w;
  topk::Lists lists;
  ctx.run_agreed([&] { lists = topk::read_lists(dist::expand_rank_path(a.lists, ctx.rank(), ctx.size())); });
  const double read_s = w.seconds();
  dist::TopkResult r;
  if (cli::has_rank_placeholder(a.lists)) {
    topk::Aggregate agg;
    ctx.run_agreed([&] { agg = topk::Aggregate::parse(a.agg, lists.n); });
    r = dist::topk_partitioned(ctx, lists, a.k, agg, o);
  } else {
    const std::uint32_t n = lists.n;
    topk::Aggregate agg;
    ctx.run_agreed([&] { agg = topk::Aggregate::parse(a.agg, n); });
    topk::Lists mine;
    mine.n = 0;
    mine.m = lists.m;
    std::vector<std::uint32_t> held;
    for (std::uint32_t i = std::uint32_t(ctx.rank()); i < n; i += std::uint32_t(ctx.size())) {
      const auto l = lists.list(i);
      mine.entries.insert(mine.entries.end(), l.begin(), l.end());
      held.push_back(i);
      ++mine.n;
    }
    lists = {};
    r = dist::topk_distributed_lists(ctx, mine, held, n, a.k, agg);
  }
  cli::print_notices(r.report.report);
  if (ctx.rank() == 0) {
    print_items(a, r.items);
    if (a.explain)
      std::cerr << ctx.describe() << '\n'
                << r.report.report.explain()
                << fmt::format("  read {}; {} B sent, {} B received by rank 0\n", human_seconds(read_s),
                               r.report.traffic.bytes_sent, r.report.traffic.bytes_received);
  }
  return 0;
}
#endif

std::uint64_t parse_stride(const std::string& s) {
  if (s == "auto") return 0;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v == 0 || v > (std::uint64_t{1} << 32))
    throw UsageError(fmt::format("--stride '{}': expected a number of levels from 1 to 2^32, or 'auto'", s));
  return v;
}

const bool registered = cli::register_command(
    {"topk", "Top-k objects of ranked lists (TKL1) under sum / wsum / min / max: NRA, TA or full scan",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_option("--lists,-l", a->lists, "TKL1 file ('-' for standard input)")->required();
       app.add_option("--k,-k", a->k, "How many objects (1..m)")
           ->required()
           ->check(cli::in_range<std::uint64_t>(1, std::uint64_t{1} << 32));
       app.add_option("--agg", a->agg, "sum | wsum:w1,w2,.. | min | max")->capture_default_str();
       app.add_option("--algo", a->algo, "nra | ta | scan | auto")->capture_default_str();
       app.add_option("--stride", a->stride, "Levels per NRA/TA batch, or auto (geometric growth); 100 = the paper")
           ->capture_default_str();
       app.add_option("--device", a->device, "auto | cpu | gpu")->capture_default_str();
       app.add_option("--memory", a->memory, "GPU memory for the lists: device | managed")->capture_default_str();
       app.add_option("--threads", a->threads, "CPU threads (0: all cores; NRA with 1 = the paper's baseline)")
           ->check(cli::in_range(0, cli::kMaxThreads));
       app.add_flag("--explain", a->explain,
                    "Print what ran where, depth per list, candidates, rounds, time per phase");
       app.add_flag("--json", a->json, "Print {\"k\": K, \"results\": [{\"id\": ID, \"score\": S}, ...]}");
       cli::add_distributed_options(app, a->distributed);
       app.footer(
           "--distributed: with {rank} in --lists each rank's file holds every list over its own objects (global id = "
           "objects of the ranks below + local id); without it the ranks share one file and rank r keeps lists r, r+P, "
           "... (exact top-k by TPUT; sum and wsum). Rank 0 prints the result.");
       return [a] {
         topk::Options o;
         o.algo = topk::parse_algo(a->algo);
         o.device = parse_device(a->device);
         o.memory = topk::parse_memory(a->memory);
         o.stride = parse_stride(a->stride);
         o.threads = a->threads;
         if (a->distributed) {
           cli::require_mpi();
#if TANDEM_HAS_MPI
           return run_distributed(*a, o);
#endif
         }
         Stopwatch w;
         const auto lists = topk::read_lists(a->lists);
         const double read_s = w.seconds();
         const auto agg = topk::Aggregate::parse(a->agg, lists.n);
         auto r = topk::query(lists, a->k, agg, o);
         r.report.stages.insert(r.report.stages.begin(), Stage{"read + validate lists", "cpu", read_s,
                                                               fmt::format("{} lists x {} objects", lists.n, lists.m)});
         print_items(*a, r.items);
         if (a->explain) (a->json ? std::cerr : std::cout) << r.report.explain();
         return 0;
       };
     }});

// Demo: NRA against the full scan on generated lists, both checked against the brute force.
const bool demo = cli::register_demo_part(
    {40, "top-k", [] {
       const bool gpu = gpu_count() > 0;
       topk::GenOptions g;
       g.objects = gpu ? 4'000'000 : 400'000;
       g.lists = 4;
       const auto lists = topk::generate(g);
       const std::uint64_t k = 100;
       const auto ref = topk::reference(lists, k);
       bool ok = true;
       for (auto algo : {topk::Algo::nra, topk::Algo::scan, topk::Algo::auto_}) {
         topk::Options o;
         o.algo = algo;
         Stopwatch w;
         auto r = topk::query(lists, k, {}, o);
         const double s = w.seconds();
         const bool same = r.items == ref;
         ok &= same;
         std::cout << fmt::format(
             "{:<5} on {:<8} top-{} of {} objects x {} lists (uniform): {:>9}, depth {:.1f}%, {}\n",
             topk::to_string(algo), r.stats.where, k, lists.m, lists.n, human_seconds(s),
             100.0 * r.stats.mean_depth() / double(lists.m), same ? "matches brute force" : "DIFFERS from brute force");
       }
       return ok;
     }});

}  // namespace
