// tandem topk: the k best objects of ranked lists under a monotone aggregate (NRA, TA or full scan).
#include <charconv>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
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
};

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
       return [a] {
         topk::Options o;
         o.algo = topk::parse_algo(a->algo);
         o.device = parse_device(a->device);
         o.memory = topk::parse_memory(a->memory);
         o.stride = parse_stride(a->stride);
         o.threads = a->threads;
         Stopwatch w;
         const auto lists = topk::read_lists(a->lists);
         const double read_s = w.seconds();
         const auto agg = topk::Aggregate::parse(a->agg, lists.n);
         auto r = topk::query(lists, a->k, agg, o);
         r.report.stages.insert(r.report.stages.begin(), Stage{"read + validate lists", "cpu", read_s,
                                                               fmt::format("{} lists x {} objects", lists.n, lists.m)});
         if (a->json) {
           nlohmann::json res = nlohmann::json::array();
           for (const auto& it : r.items) res.push_back({{"id", it.id}, {"score", it.score}});
           std::cout << nlohmann::json({{"k", a->k}, {"results", res}}).dump() << '\n';
         } else {
           for (std::size_t i = 0; i < r.items.size(); ++i)
             std::cout << fmt::format("{}\t{}\t{}\n", i + 1, r.items[i].id, r.items[i].score);
         }
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
