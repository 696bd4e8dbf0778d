// tandem index: thread-index generation without division.
//   tandem index --dims XxYxZ [--step C] [--show K] [--packed] [--json] [--explain]
//   tandem index --bench [--quick]      (GPU benchmarks; exit 1 without a GPU)
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "options.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/report.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/index.hpp"
#include "tandem/index/benchmark.hpp"

namespace {

using namespace tandem;
using namespace tandem::index;

struct Args {
  std::string dims;
  long long step{1};
  long long show{8};
  bool packed{false}, json{false}, explain{false}, bench{false}, quick{false};
};

int run_bench(const Args& a) {
  BenchOptions o;
  o.quick = a.quick;
  const auto r = run_gpu_benchmarks(o, [](const BenchRow& row) {
    std::cout << fmt::format("{:<40} {:<26} {:>10}  {:>12}  {}\n", row.case_name, row.method,
                             human_seconds(row.stats.median), human_rate(row.bytes / row.stats.median, "B"),
                             row.ok ? "ok" : "WRONG")
              << std::flush;
  });
  bool failed = false;
  for (const auto& g : r.goals) {
    if (g.is_goal)
      std::cout << fmt::format("goal {:<60} {:.3g}{} (goal >= {:.3g}{}) {}\n", g.what, g.value, g.unit, g.goal, g.unit,
                               g.value >= g.goal ? "PASS" : "MISS");
    else std::cout << fmt::format("info {:<60} {:.4g}{}\n", g.what, g.value, g.unit);
  }
  for (const auto& row : r.rows) failed |= !row.ok;
  if (failed) std::cerr << "tandem: error: a benchmark result differs from its reference\n";
  return failed ? 1 : 0;
}

int run_index(const Args& a) {
  const Dims3 d = parse_dims(a.dims, true);
  const std::uint64_t c = std::uint64_t(a.step), show = std::uint64_t(a.show);
  const auto step = make_step<std::uint64_t>(c, d);
  const PackLayout l = pack_layout(d);
  const std::uint64_t total = d.count();

  // The first K indices n = 0, C, 2C, ... by the division-free step, each checked against div/mod.
  struct Row {
    std::uint64_t n;
    Index3<std::uint64_t> carry, direct;
    std::uint64_t packed;
  };
  std::vector<Row> rows;
  Stopwatch w;
  Index3<std::uint64_t> i{};
  for (std::uint64_t n = 0, k = 0; k < show && i.z < d.z; ++k, n += c) {
    rows.push_back({n, i, index_of<std::uint64_t>(n, d), pack(i, l)});
    i = advance(i, step.idx, d);
  }
  const double gen_s = w.seconds();
  bool agree = true;
  for (const auto& r : rows) agree &= r.carry == r.direct && unpack<std::uint64_t>(r.packed, l) == r.carry;
  if (!agree) throw Error("division-free step and div/mod disagree (a bug: please report the dimensions)");

  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows)
      out.push_back({{"n", r.n}, {"x", r.carry.x}, {"y", r.carry.y}, {"z", r.carry.z}, {"packed", r.packed}});
    std::cout << out.dump(2) << '\n';
    return 0;
  }
  std::cout << fmt::format("dims {} ({} indices), step {} = ({}, {}, {})\n", to_string(d), total, a.step, step.idx.x,
                           step.idx.y, step.idx.z);
  std::cout << fmt::format("bit widths wx={} wy={} wz={} ({} bits) -> {}-bit words; packed table {}\n", l.wx, l.wy,
                           l.wz, l.bits(), l.word_bits, human_bytes(total * l.word_bits / 8));
  std::cout << fmt::format("{:>12}  {:>22}  {:>22}{}\n", "n", "carry (x, y, z)", "div/mod (x, y, z)",
                           a.packed ? "  packed" : "");
  for (const auto& r : rows) {
    std::cout << fmt::format("{:>12}  {:>22}  {:>22}", r.n,
                             fmt::format("({}, {}, {})", r.carry.x, r.carry.y, r.carry.z),
                             fmt::format("({}, {}, {})", r.direct.x, r.direct.y, r.direct.z));
    if (a.packed) std::cout << fmt::format("  0x{:0{}x}", r.packed, l.word_bits / 4);
    std::cout << '\n';
  }
  std::cout << fmt::format("{} indices, carry and div/mod agree\n", rows.size());
  if (a.explain) {
    Report rep;
    rep.operation = "index";
    rep.add("carry walk + div/mod check", "cpu", gen_s, fmt::format("{} indices", rows.size()));
    if (total <= (std::uint64_t(1) << 26)) {
      Stopwatch t;
      const PackedTable table = build_packed_table(d);
      rep.add("packed table (warp generator)", "cpu", t.seconds(),
              fmt::format("{} words of {} bits = {}", total, l.word_bits, human_bytes(table.memory_bytes())));
    } else {
      rep.note("packed table not built here: more than 2^26 indices");
    }
    rep.note(fmt::format("highest-set-bit widths: mx={} my={} mz={}; tandem widths ceil(log2 d): {} {} {}",
                         highest_bit(d.x), highest_bit(d.y), highest_bit(d.z), l.wx, l.wy, l.wz));
    std::cout << rep.explain();
    std::cout << "\ncycle model of one block of these dimensions, 4 instructions on 4 cores:\n";
    for (GenMode m : {GenMode::one_per_cycle, GenMode::warp_per_cycle, GenMode::all_at_once}) {
      const auto p = simulate_pipeline(total, 4, m);
      std::cout << fmt::format("  {:<20} index units {:>10}  first warp starts at cycle {:>10}  total {:>12} cycles\n",
                               to_string(m), p.index_units, p.first_start, p.total_cycles);
    }
    std::cout << '\n' << schedule_diagram(total, 4, GenMode::warp_per_cycle, 6);
  }
  return 0;
}

const bool registered = tandem::cli::register_command(
    {"index", "Thread-index generation without division: carry step, packing, GPU benchmarks",
     [](CLI::App& app) -> std::function<int()> {
       auto a = std::make_shared<Args>();
       app.add_option("--dims", a->dims, "Domain or block dimensions XxYxZ (x fastest)");
       app.add_option("--step", a->step, "Step C between listed indices (>= 1)")
           ->capture_default_str()
           ->check(tandem::cli::in_range(1LL, 1LL << 62));
       app.add_option("--show", a->show, "How many indices to list")
           ->capture_default_str()
           ->check(tandem::cli::in_range(0LL, 1LL << 62));
       app.add_flag("--packed", a->packed, "Show the packed words");
       app.add_flag("--json", a->json, "Print [{\"n\",\"x\",\"y\",\"z\",\"packed\"}, ...] as JSON");
       app.add_flag("--explain", a->explain, "Show widths, table memory, timings and the cycle model");
       app.add_flag("--bench", a->bench, "Run the GPU benchmarks (needs a GPU)");
       app.add_flag("--quick", a->quick, "With --bench: small sizes");
       return [a] {
         if (a->bench) return run_bench(*a);
         if (a->dims.empty()) throw UsageError("index needs --dims XxYxZ (or --bench)");
         return run_index(*a);
       };
     }});

}  // namespace
