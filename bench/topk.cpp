// Top-k over ranked lists: GPU NRA against the paper's single-thread CPU NRA, NRA's
// reading depth against TA's, and NRA against the full scan (the anchor), every result checked
// against the brute-force reference.
//
// Floor: the full scan reads n*m*8 bytes (10M x 4 = 320 MB: ~0.1 ms at ~3.3 TB/s) plus random
// read-modify-writes of an 80 MB aggregate array and a top-k select (~2 passes over 80 MB). NRA on
// uniform data reads ~11% of the lists (~35 MB) but scatters into per-object state at random
// (~4.5M atomics) and pays a host round trip per batch (~10-20 us): with an adaptive stride about
// 15-20 rounds, so its floor is dominated by the atomics and the round trips (~0.3 ms), not bytes.
// On correlated data NRA stops at ~1.3% of each list (the top scores tie): NRA in one launch,
// ~0.08 ms (src/topk/gpu/nra_one_launch.cu, k_nra_shallow).
//
// The PyTorch anchor (bench/torch/topk_anchor.py, run through `--python` at the largest size on
// the uniform and the correlated lists): bench_topk writes the lists (TKL1) and tandem's answers
// to files, the script loads the same lists onto the GPU and times what users write, median of
// --reps runs after --warmup, each between torch.cuda.synchronize() calls, the k results copied to
// the host as tandem's are: `index_add_` of the n*m (id, score) entries into a zeroed score array
// + `torch.topk` (lists as tandem holds them), and a dense [m, n] table built once (untimed) +
// sum + topk (a layout tandem's lists are not in). It checks its answers against tandem's
// (float32 sums: sorted scores within 1e-5 relative, ids differing only at ties of the k-th
// score) and exits 1 on a difference, which fails this run. Torch's floor: index_add_ reads 480 MB
// (int64 ids) and scatters 40M float atomics into 40 MB, topk reads 40 MB twice or more (~0.2 ms);
// dense: 160 MB + 40 MB (~0.07 ms) + topk. Goals (issue 22): torch scatter+topk / tandem scan >= 2,
// torch scatter+topk / tandem NRA (uniform) >= 2.5, correlated scan / NRA >= 5, auto on
// GPU-resident lists <= 1.1x the better of scan and NRA.
//
// Many queries: --queries Q (64) weight vectors (wsum, weights in 1/16..1) over the same uniform
// lists at the largest size. tandem loops its per-query API over the GPU-resident lists (NRA,
// scan, auto); torch multiplies the dense [m, n] table by [n, Q] and takes topk along the objects
// (dim 0), and loops [m, n] @ [n] + topk per query. queries/s for each; every tandem path must
// give the same answers, three queries are checked against the brute force and torch's. Floor of
// the batch: one pass over the lists (320 MB) computing Q sums per object, then Q selections over
// 10M scores (~2 x 40 MB each): ~64 x 0.03 ms ~ 2 ms, ~30k queries/s; torch's matmul writes and
// topk reads [m, Q] floats (2.6 GB each way, ~1.6 ms at 3.3 TB/s).
//
//   bench_topk [--k 100] [--max-m M] [--queries 64] [--correlated-only] [--python python3] [--no-torch-anchor]
//              [--torch-anchor bench/torch/topk_anchor.py] [--anchor-backend auto|torch|numpy]
//              [--anchor-dir /tmp]
// Without torch (or CUDA) the anchor says "skipped"; --anchor-backend numpy runs the script's
// checks with numpy on the CPU (the test of this plumbing; no GPU needed).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/topk.hpp"

using namespace tandem;
using namespace tandem::topk;

namespace {

Lists make(std::uint64_t m, Dist dist) {
  GenOptions g;
  g.objects = m;
  g.lists = 4;
  g.dist = dist;
  g.seed = 4;
  return generate(g);
}

// ---- the PyTorch anchor ----

struct Anchor {
  std::string command;  // python + script (+ backend)
  std::string dir;      // where the lists and the job go (removed after the run)
  std::string skipped;  // why it does not run; empty when it does
};

// Many queries over the same lists: the weights and tandem's answers for a few of them.
struct Batch {
  std::vector<Aggregate> aggs;
  std::map<std::size_t, std::vector<Item>> checked;
};

nlohmann::json last_json_line(const std::string& text) {
  const auto end = text.find_last_not_of("\n");
  if (end == std::string::npos) return {};
  const auto begin = text.rfind('\n', end);
  return nlohmann::json::parse(text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1), nullptr, false);
}

// The anchor's command, or why it does not run. A script that does not even answer --probe fails
// the run (missing torch or CUDA is a skip, not a failure).
Anchor find_anchor(bench::Bench& b, bool gpu) {
  Anchor a;
  const std::string backend = b.get("--anchor-backend", "auto");
  a.command = fmt::format("{} {} --backend {}", bench::shell_quote(b.get("--python", "python3")),
                          bench::shell_quote(b.get("--torch-anchor", TANDEM_SOURCE_DIR "/bench/torch/topk_anchor.py")),
                          bench::shell_quote(backend));
  a.dir = b.get("--anchor-dir", "/tmp");
  if (b.has_flag("--no-torch-anchor")) a.skipped = "--no-torch-anchor";
  else if (!gpu && backend != "numpy") a.skipped = "no GPU";
  if (!a.skipped.empty()) return a;
  const auto probe = bench::run_command(a.command + " --probe");
  const auto j = last_json_line(probe.text);
  if (probe.status != 0 || !j.is_object()) {
    a.skipped = "its --probe failed";
    b.fail(fmt::format("torch anchor: {} --probe: exit {}: {}", a.command, probe.status, probe.text));
  } else if (j.contains("skipped")) a.skipped = j["skipped"].get<std::string>();
  return a;
}

nlohmann::json pairs(const std::vector<Item>& items) {
  auto out = nlohmann::json::array();
  for (const auto& it : items) out.push_back({it.id, it.score});
  return out;
}

// Runs the script on these lists; its JSON, or null after marking the run failed.
nlohmann::json run_anchor(bench::Bench& b, const Anchor& a, const std::string& tag, const Lists& l, std::uint64_t k,
                          const std::vector<Item>& expect, const Batch* batch) {
  const std::string base = fmt::format("{}/tandem-topk-anchor-{}-{}", a.dir, tag, l.m);
  write_lists(base + ".tkl", l);
  nlohmann::json job = {
      {"lists", base + ".tkl"}, {"k", k}, {"reps", b.reps()}, {"warmup", b.warmup()}, {"expect", pairs(expect)}};
  if (batch) {
    auto w = nlohmann::json::array();
    for (const auto& agg : batch->aggs) w.push_back(agg.weights);
    nlohmann::json checked = nlohmann::json::object();
    for (const auto& [q, items] : batch->checked) checked[std::to_string(q)] = pairs(items);
    job["batch"] = {{"weights", w}, {"expect", checked}};
  }
  std::ofstream(base + ".json") << job.dump();
  const auto run = bench::run_command(fmt::format("{} {}", a.command, bench::shell_quote(base + ".json")));
  std::filesystem::remove(base + ".tkl");
  std::filesystem::remove(base + ".json");
  auto out = last_json_line(run.text);
  if (run.status != 0 || !out.is_object() || out.contains("error")) {
    if (out.is_object() && out.contains("problems"))
      for (const auto& p : out["problems"]) b.fail(fmt::format("torch anchor, {}: {}", tag, p.get<std::string>()));
    else b.fail(fmt::format("torch anchor, {}: exit {}: {}", tag, run.status, run.text));
    return nullptr;
  }
  if (out.contains("skipped")) {
    fmt::print("torch anchor: skipped ({})\n", out["skipped"].get<std::string>());
    return nullptr;
  }
  fmt::print("torch anchor, {}: {}\n", tag, out["backend"].get<std::string>());
  return out;
}

// "torch" or "numpy": the library the anchor ran on.
std::string anchor_name(const nlohmann::json& out) {
  const auto backend = out["backend"].get<std::string>();
  return backend.substr(0, backend.find(' '));
}

tandem::Stats stats_of(const nlohmann::json& j) {
  tandem::Stats s;
  s.median = j["median_s"];
  s.min = j["min_s"];
  s.max = j["max_s"];
  s.samples = j["samples"];
  return s;
}

// The anchor's rows, plus its times by name.
std::map<std::string, double> record_anchor(bench::Bench& b, const std::string& c, const nlohmann::json& out,
                                            double entries) {
  std::map<std::string, double> median;
  const std::string who = anchor_name(out);
  const std::pair<const char*, const char*> rows[] = {{"scatter_topk", " scatter (index_add_) + topk"},
                                                      {"dense_topk", " dense [m,n] sum + topk"}};
  for (const auto& [key, method] : rows) {
    const auto s = stats_of(out[key]);
    b.record(c, who + method, s, entries, "entries", true);
    median[key] = s.median;
  }
  return median;
}

// The batch's weight vectors: multiples of 1/16 in [1/16, 1] (exact in float32 too).
std::vector<Aggregate> weight_vectors(std::size_t queries, std::uint32_t lists) {
  std::mt19937 rng(22);
  std::uniform_int_distribution<int> w(1, 16);
  std::vector<Aggregate> aggs(queries);
  for (auto& a : aggs) {
    a.kind = ScoreCombine::wsum;
    for (std::uint32_t i = 0; i < lists; ++i) a.weights.push_back(w(rng) / 16.0);
  }
  return aggs;
}

tandem::Stats once(const std::function<void()>& f, int reps) {
  std::vector<double> s;
  for (int i = 0; i < reps; ++i) {
    Stopwatch w;
    f();
    s.push_back(w.seconds());
  }
  return summarize(s);
}

// What tandem's GPU paths took (median seconds) on one data set at the largest size.
struct PathTimes {
  double scan{0}, nra{0}, auto_{0};
  double best() const { return std::min(scan, nra); }
};

void auto_goal(bench::Bench& b, const std::string& label, const PathTimes& t) {
  b.goal(fmt::format("{}: GPU auto / min(scan, NRA)", label), t.auto_ / t.best(), 1.1, false);
}

// tandem against the anchor's times on the same lists (GPU and torch only).
void torch_ratios(bench::Bench& b, const std::string& label, const std::map<std::string, double>& torch,
                  const PathTimes& t, bool uniform) {
  const double scatter = torch.at("scatter_topk"), dense = torch.at("dense_topk");
  b.info(fmt::format("{}: torch scatter+topk ms", label), scatter * 1e3, "ms");
  b.info(fmt::format("{}: torch dense sum+topk ms", label), dense * 1e3, "ms");
  if (uniform) {
    b.goal(fmt::format("{}: torch scatter+topk / tandem scan", label), scatter / t.scan, 2.0);
    b.goal(fmt::format("{}: torch scatter+topk / tandem NRA", label), scatter / t.nra, 2.5);
  } else {
    b.info(fmt::format("{}: torch scatter+topk / tandem scan", label), scatter / t.scan, "x");
    b.info(fmt::format("{}: torch scatter+topk / tandem NRA", label), scatter / t.nra, "x");
  }
  b.info(fmt::format("{}: torch scatter+topk / tandem auto", label), scatter / t.auto_, "x");
  b.info(fmt::format("{}: torch dense sum+topk / tandem best", label), dense / t.best(), "x");
}

// The lists at the largest size that the anchor and the batch reuse.
struct Kept {
  Lists lists;
  std::vector<Item> ref;
  std::unique_ptr<DeviceLists> d;  // null without a GPU
  PathTimes t;
};

using QueryFn = std::function<Result(const Aggregate&)>;

// Q weighted queries over the same lists through each of tandem's paths (all must agree; three
// are checked against the brute force), then the anchor on these lists (the plain sum and the
// batch): its JSON, null when it did not run.
nlohmann::json run_batch(bench::Bench& b, const Anchor& anchor, const Kept& u, std::uint64_t k, std::size_t queries,
                         const std::vector<std::pair<std::string, QueryFn>>& paths, bool gpu) {
  const Lists& l = u.lists;
  const auto aggs = weight_vectors(queries, l.n);
  const std::string c = fmt::format("batch {} wsum, uniform {}M x {}", queries, l.m / 1e6, l.n);
  const std::string label = fmt::format("batch {} wsum {}M", queries, l.m / 1e6);
  Batch batch{aggs, {}};
  for (std::size_t q : {std::size_t{0}, queries / 2, queries - 1}) batch.checked[q] = reference(l, k, aggs[q]);
  std::vector<Result> first;
  double best_qps = 0;
  for (const auto& [name, run] : paths) {
    std::vector<Result> res(queries);
    const auto s = b.time([&] {
      for (std::size_t q = 0; q < queries; ++q) res[q] = run(aggs[q]);
    });
    bool ok = true;
    for (std::size_t q = 0; q < first.size(); ++q) ok &= res[q].items == first[q].items;
    for (const auto& [q, items] : batch.checked) ok &= res[q].items == items;
    b.record(c, name + ", one query at a time", s, double(queries), "queries", ok);
    b.info(fmt::format("{}: {} queries/s", label, name), double(queries) / s.median, "/s");
    best_qps = std::max(best_qps, double(queries) / s.median);
    if (first.empty()) first = std::move(res);
  }
  if (!anchor.skipped.empty()) return nullptr;
  auto out = run_anchor(b, anchor, "uniform", l, k, u.ref, &batch);
  if (out.is_null()) return out;
  const std::string who = anchor_name(out);
  const auto mm = stats_of(out["batch_matmul"]), loop = stats_of(out["batch_loop"]);
  b.record(c, who + " [m,n]@[n,Q] + topk dim 0", mm, double(queries), "queries", true);
  b.record(c, who + " [m,n]@[n] + topk, each query", loop, double(queries), "queries", true);
  b.info(fmt::format("{}: {} matmul+topk queries/s", label, who), double(queries) / mm.median, "/s");
  b.info(fmt::format("{}: {} per-query loop queries/s", label, who), double(queries) / loop.median, "/s");
  if (gpu && who == "torch")
    b.info(fmt::format("{}: tandem best / torch matmul", label), best_qps * mm.median / double(queries), "x");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("topk", argc, argv);
  const std::uint64_t k = std::uint64_t(b.get_int("--k", 100));
  const bool gpu = gpu_count() > 0;
  std::vector<std::uint64_t> sizes =
      b.quick() ? std::vector<std::uint64_t>{100'000, 200'000}
                : std::vector<std::uint64_t>{1'000'000, 2'000'000, 4'000'000, 6'000'000, 8'000'000, 10'000'000};
  if (b.has_flag("--max-m")) {
    const auto cap = std::uint64_t(b.get_int("--max-m", 10'000'000));
    std::erase_if(sizes, [&](std::uint64_t m) { return m > cap; });
    if (sizes.empty()) sizes.push_back(cap);
  }
  Options cpu1;
  cpu1.device = Device::cpu;
  cpu1.threads = 1;
  cpu1.stride = 100;  // the paper's baseline
  Options cpu_mt;
  cpu_mt.device = Device::cpu;
  Options g_fixed, g_adapt, g_auto;  // g_auto: Algo::auto_ on GPU-resident lists
  g_fixed.stride = 100;
  g_adapt.stride = 0;
  const Anchor anchor = find_anchor(b, gpu);
  if (!anchor.skipped.empty()) fmt::print("torch anchor: skipped ({})\n", anchor.skipped);
  Kept uni;  // uniform, largest size

  // --correlated-only: section 3 at the largest size alone (NRA in one launch against the scan).
  const bool correlated_only = b.has_flag("--correlated-only");
  // 1. The paper's experiment: uniform, 4 lists, k = 100, 1M..10M objects.
  double last_ratio = 0, last_ratio_paper = 0, nra_depth = 0, ta_depth = 0, last_m = 0;
  for (std::uint64_t m : sizes) {
    if (correlated_only) break;
    auto l = make(m, Dist::uniform);
    const auto ref = reference(l, k);
    const std::string c = fmt::format("uniform {}M x 4, k={}", double(m) / 1e6, k);
    const bool last = m == sizes.back();
    Result r1;
    auto s_cpu = once([&] { r1 = nra_cpu(l, k, {}, cpu1); }, 1);
    b.record(c, "CPU NRA 1 thread, stride 100", s_cpu, double(m) * 4, "entries", r1.items == ref,
             {{"depth", r1.stats.mean_depth() / double(m)}, {"rounds", r1.stats.rounds}});
    Result rmt;
    auto s_mt = once([&] { rmt = nra_cpu(l, k, {}, cpu_mt); }, 1);
    b.record(c, "CPU NRA all cores, adaptive", s_mt, double(m) * 4, "entries", rmt.items == ref);
    Result rs;
    auto s_scan_cpu = once([&] { rs = scan_cpu(l, k, {}, cpu_mt); }, 1);
    b.record(c, "CPU scan all cores", s_scan_cpu, double(m) * 4, "entries", rs.items == ref);
    if (m == sizes.back()) {
      // Reading depth: exact NRA (stride 100 => within 100 levels) and TA (checked every level).
      TaIndex ix = build_ta_index(l);
      Options o = cpu1;
      auto t = ta_cpu(l, k, {}, o, &ix);
      if (t.items != ref) b.fail("TA differs from the reference");
      nra_depth = 100.0 * r1.stats.mean_depth() / double(m);
      ta_depth = 100.0 * t.stats.mean_depth() / double(m);
      b.info(fmt::format("NRA depth % of each list, uniform {}M x 4 k={} (sim: 11.4)", m / 1e6, k), nra_depth, "%");
      b.info(fmt::format("TA depth % of each list, uniform {}M x 4 k={} (sim: 3.1)", m / 1e6, k), ta_depth, "%");
    }
    if (last) {
      uni.lists = std::move(l);
      uni.ref = ref;
    }
    if (!gpu) continue;
    auto d = upload(last ? uni.lists : l);
    Result rf, ra, rsc;
    auto s_fixed = b.time([&] { rf = nra_gpu(*d, k, {}, g_fixed); });
    b.record(c, "GPU NRA stride 100 (paper)", s_fixed, double(m) * 4, "entries", rf.items == ref,
             {{"rounds", rf.stats.rounds}});
    auto s_adapt = b.time([&] { ra = nra_gpu(*d, k, {}, g_adapt); });
    b.record(c, "GPU NRA adaptive stride", s_adapt, double(m) * 4, "entries", ra.items == ref,
             {{"rounds", ra.stats.rounds}, {"depth", ra.stats.mean_depth() / double(m)}});
    auto s_scan = b.time([&] { rsc = scan_gpu(*d, k, {}, g_adapt); });
    b.record(c, "GPU full scan (anchor)", s_scan, double(m) * 4, "entries", rsc.items == ref);
    if (last) {
      fmt::print("GPU full scan, stages of its last run:\n{}", rsc.report.explain());
      fmt::print("GPU NRA adaptive, stages of its last run:\n{}", ra.report.explain());
      // The scan reads the lists by id, an index built by the first scan or TA query of an upload.
      auto fresh = upload(uni.lists);
      Result first;
      Stopwatch w;
      first = scan_gpu(*fresh, k, {}, g_adapt);
      const double t_first = w.seconds();
      fmt::print("GPU full scan, first query of an upload (builds the index): {:.2f} ms\n{}", t_first * 1e3,
                 first.report.explain());
      if (first.items != ref) b.fail("GPU full scan, first query of an upload: wrong answer");
      b.info(fmt::format("uniform {}M: GPU scan first query of an upload ms", m / 1e6), t_first * 1e3, "ms");
    }
    Result rt;
    auto s_ta = b.time([&] { rt = ta_gpu(*d, k, {}, g_adapt); });
    b.record(c, "GPU TA (index built once)", s_ta, double(m) * 4, "entries", rt.items == ref);
    Result rau;
    auto s_auto = b.time([&] { rau = query(*d, k, {}, g_auto); });
    b.record(c, "GPU auto, lists on the GPU", s_auto, double(m) * 4, "entries", rau.items == ref,
             {{"picked", rau.stats.algo}});
    last_ratio = s_cpu.median / s_adapt.median;
    last_ratio_paper = s_cpu.median / s_fixed.median;
    last_m = double(m);
    if (last) {
      uni.t = {s_scan.median, s_adapt.median, s_auto.median};
      auto_goal(b, fmt::format("uniform {}M", m / 1e6), uni.t);
      b.info(fmt::format("GPU NRA stride 100 / CPU NRA 1 thread at {}M (paper: 2.7-3.8x)", m / 1'000'000.0),
             last_ratio_paper, "x");
      b.goal(fmt::format("GPU NRA adaptive vs CPU NRA 1 thread at {}M", m / 1'000'000.0), last_ratio, 100);
      b.info("GPU NRA adaptive rounds", double(ra.stats.rounds));
      b.info("GPU NRA stride 100 rounds", double(rf.stats.rounds));
      b.goal(fmt::format("uniform {}M: GPU scan time / GPU NRA time", m / 1'000'000.0), s_scan.median / s_adapt.median,
             1.0);
      b.info("GPU NRA adaptive ms", s_adapt.median * 1e3, "ms");
      b.info("GPU scan ms", s_scan.median * 1e3, "ms");
      // Managed memory (the paper's shared-memory setting): only the pages NRA touches move.
      auto dm = upload(uni.lists, Memory::managed);
      Result rm;
      auto s_man = b.time([&] { rm = nra_gpu(*dm, k, {}, g_adapt); });
      b.record(c, "GPU NRA adaptive, managed memory", s_man, double(m) * 4, "entries", rm.items == ref);
      uni.d = std::move(d);
    }
  }
  // 3. Against the full scan on correlated and anti-correlated data (largest size).
  if (gpu) {
    const std::uint64_t m = sizes.back();
    for (Dist dist : {Dist::correlated, Dist::anticorrelated}) {
      const auto l = make(m, dist);
      const auto ref = reference(l, k);
      auto d = upload(l);
      const std::string c = fmt::format("{} {}M x 4, k={}", to_string(dist), m / 1e6, k);
      Result rn, rs;
      auto s_nra = b.time([&] { rn = nra_gpu(*d, k, {}, g_adapt); });
      b.record(c, "GPU NRA adaptive", s_nra, double(m) * 4, "entries", rn.items == ref,
               {{"depth", rn.stats.mean_depth() / double(m)}});
      auto s_scan = b.time([&] { rs = scan_gpu(*d, k, {}, g_adapt); });
      b.record(c, "GPU full scan (anchor)", s_scan, double(m) * 4, "entries", rs.items == ref);
      fmt::print("GPU full scan ({}), stages of its last run:\n{}", to_string(dist), rs.report.explain());
      fmt::print("GPU NRA adaptive ({}), stages of its last run:\n{}", to_string(dist), rn.report.explain());
      Options a;
      a.device = Device::gpu;
      Result ra;
      auto s_auto = once([&] { ra = query(l, k, {}, a); }, 1);
      b.record(c, "auto (incl. upload)", s_auto, double(m) * 4, "entries", ra.items == ref,
               {{"picked", ra.stats.algo}});
      Result rd;
      auto s_dauto = b.time([&] { rd = query(*d, k, {}, g_auto); });
      b.record(c, "GPU auto, lists on the GPU", s_dauto, double(m) * 4, "entries", rd.items == ref,
               {{"picked", rd.stats.algo}});
      const PathTimes t{s_scan.median, s_nra.median, s_dauto.median};
      const std::string label = fmt::format("{} {}M", to_string(dist), m / 1e6);
      auto_goal(b, label, t);
      if (dist == Dist::correlated) {
        b.goal("correlated: GPU scan time / GPU NRA time", s_scan.median / s_nra.median, 5.0);
        b.info("correlated: GPU NRA ms", s_nra.median * 1e3, "ms");
        b.info("correlated: GPU scan ms", s_scan.median * 1e3, "ms");
        b.info("correlated: NRA depth %", 100.0 * rn.stats.mean_depth() / double(m), "%");
        bool one_launch = false;
        for (const auto& st : rn.report.stages) one_launch |= st.name.rfind("NRA in one launch: ", 0) == 0;
        b.info("correlated: NRA ran in one launch (1 = yes)", one_launch ? 1.0 : 0.0);
        if (anchor.skipped.empty())
          if (const auto out = run_anchor(b, anchor, "correlated", l, k, ref, nullptr); !out.is_null())
            torch_ratios(b, label, record_anchor(b, c, out, double(m) * 4), t, false);
      } else {
        b.info("anticorrelated: NRA depth %", 100.0 * rn.stats.mean_depth() / double(m), "%");
        b.goal("anticorrelated: auto picks the scan (1 = yes)", ra.stats.algo == "scan" ? 1.0 : 0.0, 1.0);
      }
    }
  } else {
    // CPU-only: auto's choice on anti-correlated data still says something.
    const auto l = make(sizes.back(), Dist::anticorrelated);
    Options a;
    a.device = Device::cpu;
    auto ra = query(l, k, {}, a);
    if (ra.items != reference(l, k)) b.fail("auto on anti-correlated data differs from the reference");
    b.info("no GPU: GPU figures skipped; anticorrelated auto picks the scan (1 = yes)",
           ra.stats.algo == "scan" ? 1.0 : 0.0);
  }
  if (correlated_only) return b.finish();
  // 4. Many queries over the same uniform lists, and the anchor on them.
  const std::size_t queries = std::size_t(std::max<long long>(1, b.get_int("--queries", 64)));
  std::vector<std::pair<std::string, QueryFn>> paths;
  if (gpu) {
    paths = {{"GPU NRA", [&](const Aggregate& a) { return nra_gpu(*uni.d, k, a, g_adapt); }},
             {"GPU scan", [&](const Aggregate& a) { return scan_gpu(*uni.d, k, a, g_adapt); }},
             {"GPU auto", [&](const Aggregate& a) { return query(*uni.d, k, a, g_auto); }}};
  } else {
    paths = {{"CPU NRA", [&](const Aggregate& a) { return nra_cpu(uni.lists, k, a, cpu_mt); }},
             {"CPU scan", [&](const Aggregate& a) { return scan_cpu(uni.lists, k, a, cpu_mt); }}};
  }
  const auto out = run_batch(b, anchor, uni, k, queries, paths, gpu);
  if (!out.is_null()) {
    const std::string c = fmt::format("uniform {}M x 4, k={}", uni.lists.m / 1e6, k);
    const auto torch = record_anchor(b, c, out, double(uni.lists.m) * 4);
    if (gpu && anchor_name(out) == "torch")
      torch_ratios(b, fmt::format("uniform {}M", uni.lists.m / 1e6), torch, uni.t, true);
  }
  (void)last_m;
  return b.finish();
}
