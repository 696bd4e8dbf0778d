// MapReduce engines against the sort-based anchor: group-by count of u32 keys with CUB
// radix sort + DeviceRunLengthEncode, measured in the same process on the same device data, and
// word count throughput (GPU on device-resident text, CPU engine, GPU end-to-end from a file).
//
// Group-by: the hash path (open addressing, hot keys in shared memory) is the engine of the goal
// lines; the chained engine runs at Zipf 1.0/1.5 for the hot-path on/off lines.
// A table of throughput vs Zipf exponent (ZIPF_TABLE lines) is printed for plotting.
//
// Floor: 2^27 u32 keys = 512 MiB read once; at ~3.3 TB/s (H100 copy read share) that is ~0.16 ms.
// The anchor sorts (4 passes of 8 bits over keys: ~8 x 512 MiB moved) and is ~2.8 ms on an H200.
// The hash engine reads the keys once; its cost is the table work per key: a shared-memory probe
// and atomic for hot keys (cheap), an L2-resident chain probe + atomic for cold keys (1M keys x
// 24 B = 24 MiB fits the 50-60 MB L2).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>

#include "harness.hpp"
#include "mapreduce/gpu_jobs.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/mapreduce/gpu_engine.cuh"

#include "groupby/hash/context.hpp"
#include "groupby/hash/engine.hpp"

using namespace tandem;
using Job = mapreduce::GroupByJob<std::uint32_t, void>;

namespace {

struct Anchor {
  gpu::DeviceBuffer<std::uint32_t> sorted, uniq, counts, nruns;
  gpu::DeviceBuffer<unsigned char> temp;
  std::size_t n;
  explicit Anchor(std::size_t n_) : sorted(n_), uniq(n_), counts(n_), nruns(1), n(n_) {
    std::size_t t1 = 0, t2 = 0;
    TANDEM_CUDA(
        cub::DeviceRadixSort::SortKeys(nullptr, t1, (const std::uint32_t*)nullptr, (std::uint32_t*)nullptr, int(n)));
    TANDEM_CUDA(cub::DeviceRunLengthEncode::Encode(nullptr, t2, (const std::uint32_t*)nullptr, (std::uint32_t*)nullptr,
                                                   (std::uint32_t*)nullptr, (std::uint32_t*)nullptr, int(n)));
    temp = gpu::DeviceBuffer<unsigned char>(std::max(t1, t2));
  }
  void run(const std::uint32_t* keys, cudaStream_t s) {
    std::size_t t = temp.size();
    TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(temp.data(), t, keys, sorted.data(), int(n), 0, 32, s));
    t = temp.size();
    TANDEM_CUDA(cub::DeviceRunLengthEncode::Encode(temp.data(), t, sorted.data(), uniq.data(), counts.data(),
                                                   nruns.data(), int(n), s));
  }
  std::vector<std::pair<std::uint32_t, std::uint64_t>> result(cudaStream_t s) {
    std::uint32_t r = 0;
    TANDEM_CUDA(cudaMemcpyAsync(&r, nruns.data(), 4, cudaMemcpyDeviceToHost, s));
    TANDEM_CUDA(cudaStreamSynchronize(s));
    std::vector<std::uint32_t> u(r), c(r);
    TANDEM_CUDA(cudaMemcpy(u.data(), uniq.data(), r * 4ull, cudaMemcpyDeviceToHost));
    TANDEM_CUDA(cudaMemcpy(c.data(), counts.data(), r * 4ull, cudaMemcpyDeviceToHost));
    std::vector<std::pair<std::uint32_t, std::uint64_t>> v(r);
    for (std::uint32_t i = 0; i < r; ++i) v[i] = {u[i], c[i]};
    return v;
  }
};

template <class DR>
std::vector<std::pair<std::uint32_t, std::uint64_t>> engine_result(const DR& d) {
  std::vector<std::uint32_t> k(d.n);
  std::vector<std::uint64_t> c(d.n);
  if (d.n) {
    TANDEM_CUDA(cudaMemcpy(k.data(), d.keys, d.n * 4, cudaMemcpyDeviceToHost));
    TANDEM_CUDA(cudaMemcpy(c.data(), d.values, d.n * 8, cudaMemcpyDeviceToHost));
  }
  std::vector<std::pair<std::uint32_t, std::uint64_t>> v(d.n);
  for (std::size_t i = 0; i < d.n; ++i) v[i] = {k[i], c[i]};
  std::sort(v.begin(), v.end());
  return v;
}

// The static engine: its workspaces stay allocated across the runs (and until exit).
mapreduce::gpu_engine::Engine<Job>& chained_engine() {
  static mapreduce::gpu_engine::Engine<Job> e;
  return e;
}

// The hash engine on one workspace for the whole benchmark (allocated once, as the chained
// engine's); its device result stays valid until the next run.
struct HashEngine {
  hash_groupby::Context context;
  hash_groupby::Workspace ws;
  mapreduce::gpu_engine::DeviceResult<std::uint32_t, std::uint64_t> run_device(const std::uint32_t* keys, std::size_t n,
                                                                               const mapreduce::Options& o,
                                                                               mapreduce::EngineStats& st, Report& rep,
                                                                               cudaStream_t s) {
    return hash_groupby::Engine<std::uint32_t, void>(context.current(), ws).run_device(keys, nullptr, n, o, st, rep, s);
  }
};

// What every GPU part shares: the keys on the device, the anchor, the stream.
struct Ctx {
  bench::Bench& b;
  int lg;
  std::size_t n;
  std::uint64_t distinct;
  gpu::Stream s;
  gpu::DeviceBuffer<std::uint32_t> dkeys;
  Anchor anchor;
  HashEngine hash;
  Ctx(bench::Bench& b_, int lg_, std::uint64_t distinct_)
      : b(b_), lg(lg_), n(std::size_t{1} << lg_), distinct(distinct_), dkeys(n), anchor(n) {}
};

// One engine configuration: "hash" (the open-addressing path) or the chained engine.
struct Config {
  std::string label;
  bool hash;
  mapreduce::Options o;
};

// Without a GPU: the CPU engine on a small text.
int cpu_only(bench::Bench& b) {
  b.info("no GPU: mapreduce GPU figures skipped", 0);
  auto vocab = mapreduce::make_vocabulary(10000, 1);
  auto text = mapreduce::zipf_text(std::size_t{8} << 20, vocab, 1.0, 1);
  mapreduce::WordCountOptions o;
  o.engine.device = Device::cpu;
  auto st = b.time([&] { mapreduce::wordcount(text, o); });
  b.record("word count 8 MiB", "CPU engine", st, double(text.size()), "B", true);
  b.info("CPU engine word count GB/s", text.size() / st.median / 1e9);
  return b.finish();
}

// The anchor on the device keys, its result checked against a host count in quick runs.
Stats run_anchor(Ctx& c, const std::string& name, const std::vector<std::uint32_t>& keys,
                 std::vector<std::pair<std::uint32_t, std::uint64_t>>& ref) {
  auto at = c.b.measure([&] {
    gpu::Event e0, e1;
    e0.record(c.s);
    c.anchor.run(c.dkeys.data(), c.s);
    e1.record(c.s);
    e1.sync();
    return e1.seconds_since(e0);
  });
  ref = c.anchor.result(c.s);
  bool anchor_ok = true;
  if (c.b.quick()) {
    std::unordered_map<std::uint32_t, std::uint64_t> host_ref;
    for (auto k : keys) ++host_ref[k];
    anchor_ok = host_ref.size() == ref.size();
    for (const auto& [k, n] : ref) anchor_ok = anchor_ok && host_ref[k] == n;
  }
  if (!anchor_ok) c.b.fail(name + ": the anchor differs from the host count");
  c.b.record(name, "CUB radix sort + RunLengthEncode", at, double(c.n), "keys", anchor_ok);
  return at;
}

void print_engine_run(const std::string& name, const Config& cf, const Stats& et, const Stats& at,
                      const mapreduce::EngineStats& st, const Report& tune_rep, const Report& rep) {
  std::printf(
      "  %s / %s: %.3f ms (anchor %.3f ms), Bs=%d N=%d p=%.3g H=%llu (%.1f%% of sample) S=%zu x%u, shared %.1f%%, "
      "table %llu slots, overflowed %llu, grows %llu, retries %llu\n",
      name.c_str(), cf.label.c_str(), et.median * 1e3, at.median * 1e3, st.blocks, st.block_threads, st.sample_fraction,
      (unsigned long long)st.hot_keys, st.hot_share * 100, st.shared_entries, st.sub_tables,
      100.0 * st.shared_hits / std::max<double>(1, st.shared_hits + st.global_hits), (unsigned long long)st.table_slots,
      (unsigned long long)st.spilled, (unsigned long long)st.result_grows, (unsigned long long)st.retries);
  if (!st.partition_note.empty())
    std::printf("    cold tier: %s (%llu pairs partitioned, %llu to the global table)\n", st.partition_note.c_str(),
                (unsigned long long)st.partitioned, (unsigned long long)st.partition_direct);
  for (const auto* r : {&tune_rep, &rep})
    for (const auto& note : r->notes)
      if (note.find("tun") != std::string::npos || note.find("grown") != std::string::npos)
        std::printf("    %s\n", note.c_str());
  for (const auto& stg : rep.stages)
    std::printf("    stage %-42s %8.3f ms  %s\n", stg.name.c_str(), stg.seconds * 1e3, stg.detail.c_str());
}

// One configuration on the device keys; its last run's result is checked against `ref`.
double run_config(Ctx& c, const std::string& name, const Config& cf, const Stats& at,
                  const std::vector<std::pair<std::uint32_t, std::uint64_t>>& ref) {
  Job job{c.dkeys.data(), nullptr};
  mapreduce::EngineStats st;
  Report rep, tune_rep;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> got;
  // The last run's result, fetched and checked after the timed runs (as the anchor's is): a
  // host copy and comparison between runs would leave the GPU idle before each timed run.
  std::function<void()> fetch;
  int calls = 0;
  auto et = c.b.measure([&] {
    if (calls++ == 1) tune_rep = rep;  // the first (warm-up) run's notes: tuning
    rep = Report{};
    TANDEM_CUDA(cudaDeviceSynchronize());
    Stopwatch w;
    if (cf.hash) {
      auto d = c.hash.run_device(c.dkeys.data(), c.n, cf.o, st, rep, c.s);
      TANDEM_CUDA(cudaStreamSynchronize(c.s));
      fetch = [&got, d] { got = engine_result(d); };
      return w.seconds();
    }
    auto d = chained_engine().run_device(job, c.n, cf.o, st, rep, c.s);
    TANDEM_CUDA(cudaStreamSynchronize(c.s));
    fetch = [&got, d] { got = engine_result(d); };
    return w.seconds();
  });
  fetch();
  const bool ok = got == ref;
  if (!ok) c.b.fail(gpu::format("{} / {}: engine result differs from the anchor", name, cf.label));
  c.b.record(name, "engine " + cf.label, et, double(c.n), "keys", ok,
             {{"hot_keys", st.hot_keys},
              {"hot_share", st.hot_share},
              {"shared_hits", st.shared_hits},
              {"global_hits", st.global_hits},
              {"spilled", st.spilled},
              {"retries", st.retries},
              {"blocks", st.blocks},
              {"threads", st.block_threads},
              {"p", st.sample_fraction},
              {"table_slots", st.table_slots},
              {"sub_tables", st.sub_tables}});
  print_engine_run(name, cf, et, at, st, tune_rep, rep);
  return et.median;
}

// Runs the anchor and every configuration on `keys`; returns the anchor's median and, per config,
// its median (seconds). Every engine result is checked against the anchor's.
double run_case(Ctx& c, const std::string& name, const std::vector<std::uint32_t>& keys,
                const std::vector<Config>& configs, std::vector<double>& times_out) {
  TANDEM_CUDA(cudaMemcpy(c.dkeys.data(), keys.data(), c.n * 4, cudaMemcpyHostToDevice));
  std::vector<std::pair<std::uint32_t, std::uint64_t>> ref;
  const Stats at = run_anchor(c, name, keys, ref);
  for (const auto& cf : configs) times_out.push_back(run_config(c, name, cf, at, ref));
  return at.median;
}

// --stages: untuned hash-path plans side by side, with each stage's median time: where a plan
// spends it.
struct StagePlan {
  std::string label;
  int threads;
  bool part, match, buckets = true;
};

// A comma list of integers from option `key` (empty when absent).
std::vector<long long> int_list(const bench::Bench& b, const std::string& key) {
  std::vector<long long> v;
  std::stringstream ss(b.get(key, ""));
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) v.push_back(std::atoll(item.c_str()));
  return v;
}

void time_stage_plan(Ctx& c, double z, const StagePlan& pl, long long table) {
  mapreduce::Options o;
  o.tune = false;
  o.block_threads = pl.threads;
  o.partition_cold = pl.part;
  o.warp_match = pl.match;
  o.hot_buckets = pl.buckets;
  o.result_entries = std::size_t(table);
  if (c.b.has_flag("--stages-hot")) {  // a hot table of this many keys (shared memory allowing)
    o.shared_entries = std::size_t(c.b.get_int("--stages-hot", 4096));
    o.hot_fraction = 1.0;
  }
  std::map<std::string, std::vector<double>> stage;
  std::vector<double> total;
  mapreduce::EngineStats st;
  for (int r = 0; r < 6; ++r) {
    Report rep;
    TANDEM_CUDA(cudaDeviceSynchronize());
    Stopwatch w;
    c.hash.run_device(c.dkeys.data(), c.n, o, st, rep, c.s);
    TANDEM_CUDA(cudaStreamSynchronize(c.s));
    if (r == 0) continue;  // warm-up
    total.push_back(w.seconds());
    for (const auto& g : rep.stages) stage[g.name].push_back(g.seconds);
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2] * 1e3;
  };
  std::printf(
      "STAGES zipf %.1f | %-36s | total %.3f ms | H=%llu (%.1f%% of sample) S=%zu, table %llu slots (Chao1 %llu, upper "
      "%llu), "
      "grows %llu, %s\n",
      z, pl.label.c_str(), med(total), (unsigned long long)st.hot_keys, st.hot_share * 100, st.shared_entries,
      (unsigned long long)st.table_slots, (unsigned long long)st.distinct_estimate,
      (unsigned long long)st.distinct_upper, (unsigned long long)st.result_grows, st.partition_note.c_str());
  for (const auto& [name, v] : stage) std::printf("STAGES     %-44s %.3f ms\n", name.c_str(), med(v));
}

int stage_report(Ctx& c) {
  const std::vector<StagePlan> plans{{"N=512 partitioned", 512, true, true},
                                     {"N=512 global table", 512, false, true},
                                     {"N=1024 partitioned", 1024, true, true},
                                     {"N=1024 global table", 1024, false, true},
                                     {"N=512 partitioned, no match", 512, true, false},
                                     {"N=512 global table, no match", 512, false, false},
                                     {"N=512 partitioned, linear probing", 512, true, true, false},
                                     {"N=512 global table, linear probing", 512, false, true, false}};
  std::vector<double> zs{0.0, 1.0};
  if (c.b.has_flag("--stages-zipf")) zs = {c.b.get_double("--stages-zipf", 1.0)};
  // plan indices (default all) and global table sizes in slots (default: sized from the sample, 0 too)
  const auto only = int_list(c.b, "--stages-plan");
  auto tables = int_list(c.b, "--stages-table");
  if (tables.empty()) tables.push_back(0);
  for (double z : zs) {
    auto keys = mapreduce::zipf_keys_u32(c.n, c.distinct, z, 1 + std::uint64_t(z * 100));
    TANDEM_CUDA(cudaMemcpy(c.dkeys.data(), keys.data(), c.n * 4, cudaMemcpyHostToDevice));
    for (std::size_t pt = 0; pt < plans.size() * tables.size(); ++pt) {
      const std::size_t pi = pt % plans.size();
      if (!only.empty() && std::find(only.begin(), only.end(), (long long)pi) == only.end()) continue;
      time_stage_plan(c, z, plans[pi], tables[pt / plans.size()]);
    }
  }
  return c.b.finish();
}

// The group-by configurations: the hash path as tuned and with one feature off at a time, the
// chained engine in both table modes with and without hot keys.
struct GroupByConfigs {
  mapreduce::Options hash_auto, hash_cold, hash_nomatch, hash_nopart, hash_linear;
  mapreduce::Options block_hot, direct_hot, block_cold, direct_cold;
  GroupByConfigs() {
    hash_cold = hash_auto;
    hash_cold.hot_keys = false;
    hash_nomatch = hash_auto;
    hash_nomatch.warp_match = false;
    hash_nopart = hash_auto;
    hash_nopart.partition_cold = false;
    hash_linear = hash_auto;
    hash_linear.hot_buckets = false;
    block_hot.tables = mapreduce::Options::Tables::block;
    direct_hot = block_hot;
    direct_hot.tables = mapreduce::Options::Tables::direct;
    block_cold = block_hot;
    block_cold.hot_keys = false;
    direct_cold = direct_hot;
    direct_cold.hot_keys = false;
  }
};

struct ZipfRow {
  double s, anchor, hash, chained;
};

// One exponent of the Zipf sweep: the exponent 0 case is the uniform goal, 1.0 the Zipf goal; at
// 1.0 and 1.5 the hot-key path is also switched off (hash path and both chained modes).
ZipfRow zipf_case(Ctx& c, const GroupByConfigs& g, double z) {
  auto keys = mapreduce::zipf_keys_u32(c.n, c.distinct, z, 1 + std::uint64_t(z * 100));
  const bool onoff = z == 1.0 || z == 1.5;
  std::vector<Config> cfgs{{"hash", true, g.hash_auto}};
  if (onoff) {
    cfgs.push_back({"hash, no hot keys", true, g.hash_cold});
    cfgs.push_back({"chained, direct", false, g.direct_hot});
    cfgs.push_back({"chained, direct, no hot keys", false, g.direct_cold});
    cfgs.push_back({"chained, block tables", false, g.block_hot});
    cfgs.push_back({"chained, block tables, no hot keys", false, g.block_cold});
    cfgs.push_back({"hash, no warp match", true, g.hash_nomatch});
    cfgs.push_back({"hash, linear-probing hot table", true, g.hash_linear});
  }
  const bool part_row = z == 0.0 || z == 1.0;
  if (part_row) cfgs.push_back({"hash, no partitions", true, g.hash_nopart});
  std::vector<double> t;
  const double a = run_case(c, gpu::format("zipf{}", z), keys, cfgs, t);
  double chained_best = 0;
  auto& b = c.b;
  if (onoff) {
    b.info(gpu::format("hash path: hot keys in shared memory on vs off, Zipf {}", z), t[1] / t[0], "x");
    b.info(gpu::format("chained engine (direct): hot keys on vs off, Zipf {}", z), t[3] / t[2], "x");
    b.info(gpu::format("chained engine (block tables): hot keys on vs off, Zipf {}", z), t[5] / t[4], "x");
    chained_best = std::min(t[2], t[4]);
    b.info(gpu::format("hash path: lanes grouped by key (match_any) vs top-key ballots only, Zipf {}", z), t[6] / t[0],
           "x");
    b.info(gpu::format("hash path: bucketed two-choice hot table vs linear probing, Zipf {}", z), t[7] / t[0], "x");
  }
  if (part_row)
    b.info(gpu::format("hash path: cold keys partitioned vs straight into the global table, Zipf {}", z),
           t.back() / t[0], "x");
  if (z == 0.0)
    b.goal(gpu::format("group-by count 2^{} u32 uniform / {} keys vs CUB sort+RLE", c.lg, c.distinct), a / t[0], 1.0);
  if (z == 1.0)
    b.goal(gpu::format("group-by count 2^{} u32 Zipf 1.0 / {} keys vs CUB sort+RLE", c.lg, c.distinct), a / t[0], 2.0);
  return {z, a, t[0], chained_best};
}

void groupby(Ctx& c) {
  const GroupByConfigs g;
  std::vector<ZipfRow> rows;
  std::vector<double> sweep{0.0, 0.5, 1.0, 1.25, 1.5, 2.0};
  if (c.b.has_flag("--no-sweep")) sweep = {0.0, 1.0, 1.5};
  for (double z : sweep) rows.push_back(zipf_case(c, g, z));
  {
    auto keys = mapreduce::zipf_keys_u32(c.n, 128, 0.0, 3);
    std::vector<double> t;
    mapreduce::Options probing = g.hash_auto;
    probing.two_choice = false;
    const double a = run_case(c, "uniform128", keys,
                              {{"hash", true, g.hash_auto},
                               {"chained, block tables", false, g.block_hot},
                               {"hash, linear probing", true, probing}},
                              t);
    c.b.goal(gpu::format("group-by count 2^{} u32 128 distinct vs CUB sort+RLE", c.lg), a / t[0], 5.0);
    c.b.info("chained engine (block tables) vs CUB sort+RLE, 128 distinct", a / t[1], "x");
    c.b.info("hash path, 128 distinct: two-choice table vs linear probing", t[2] / t[0], "x");
  }
  std::printf(
      "\nThroughput vs Zipf exponent (2^%d u32 keys over %llu distinct, group-by count, Gkeys/s; chained = best "
      "chained mode):\n",
      c.lg, (unsigned long long)c.distinct);
  std::printf("ZIPF_TABLE|exponent|CUB sort+RLE|hash engine|chained engine\n");
  for (const auto& r : rows)
    std::printf("ZIPF_TABLE|%.2f|%.2f|%.2f|%s\n", r.s, c.n / r.anchor / 1e9, c.n / r.hash / 1e9,
                r.chained > 0 ? gpu::format("{}", c.n / r.chained / 1e9).c_str() : "-");
}

// The GPU word count on device-resident text in both table modes, and end to end from a file.
void gpu_wordcount(bench::Bench& b, const std::string& text, const mapreduce::WordCount& full_ref) {
  gpu::DeviceBuffer<char> dtext(text.size());
  TANDEM_CUDA(cudaMemcpy(dtext.data(), text.data(), text.size(), cudaMemcpyHostToDevice));
  for (int mode = 0; mode < 2; ++mode) {
    mapreduce::Options o;
    o.device = Device::gpu;
    o.tables = mode ? mapreduce::Options::Tables::block : mapreduce::Options::Tables::direct;
    mapreduce::EngineStats st;
    Report rep;
    std::vector<std::pair<std::string, std::uint64_t>> words;
    auto gt = b.measure([&] {
      Stopwatch w;
      words = mapreduce::detail::gpu_wordcount_device(dtext.data(), text.size(), o, st, rep);
      return w.seconds();
    });
    const bool ok = words == full_ref.words;
    if (!ok) b.fail("GPU word count differs from the CPU engine");
    b.record("word count", mode ? "GPU engine (device text, block tables)" : "GPU engine (device text, direct)", gt,
             double(text.size()), "B", ok,
             {{"hot_keys", st.hot_keys}, {"shared_hits", st.shared_hits}, {"global_hits", st.global_hits}});
    b.info(gpu::format("word count GPU device-resident GB/s ({})", mode ? "block tables" : "direct"),
           text.size() / gt.median / 1e9);
    if (mode == 0)
      b.goal("word count GPU on device-resident text GB/s", text.size() / gt.median / 1e9, 10.0, true, "GB/s");
  }
  mapreduce::WordCountOptions go;
  go.engine.device = Device::gpu;
  const std::string path = "/tmp/tandem_bench_wordcount.txt";
  { std::ofstream(path, std::ios::binary).write(text.data(), std::streamsize(text.size())); }
  // From the file in the page cache to the sorted (word, count) list: the read overlapped with the
  // upload, the count, the words and the output sort (the process's CUDA start-up excluded).
  Report last;
  auto e2e = b.time([&] {
    auto r = mapreduce::wordcount_files({path}, go);
    if (r.words != full_ref.words) b.fail("GPU end-to-end word count differs");
    last = std::move(r.report);
  });
  std::remove(path.c_str());
  b.record("word count", "GPU end-to-end from a file", e2e, double(text.size()), "B", true);
  for (const auto& st : last.stages)
    b.info(gpu::format("word count GPU end-to-end stage ms: {}", st.name), st.seconds * 1e3, "ms");
  b.goal("word count GPU end-to-end from a file GB/s", text.size() / e2e.median / 1e9, 10.0, true, "GB/s");
}

// Word count: the CPU engine on 2 and on all threads, then the GPU (checked against the CPU).
void wordcount(bench::Bench& b) {
  const std::size_t tbytes = b.quick() ? (std::size_t{8} << 20) : (std::size_t{512} << 20);
  auto vocab = mapreduce::make_vocabulary(100000, 7);
  auto text = mapreduce::zipf_text(tbytes, vocab, 1.0, 7);
  mapreduce::WordCountOptions wo;
  wo.engine.device = Device::cpu;
  wo.engine.threads = 2;
  auto cpu_small = std::string_view(text).substr(0, std::min<std::size_t>(text.size(), std::size_t{64} << 20));
  auto cref = mapreduce::wordcount(cpu_small, wo);
  auto c2 = b.time([&] { mapreduce::wordcount(cpu_small, wo); });
  b.record("word count", "CPU engine 2 threads", c2, double(cpu_small.size()), "B", true);
  wo.engine.threads = std::min(16, default_threads());
  auto c16 = b.time([&] { mapreduce::wordcount(cpu_small, wo); });
  b.record("word count", gpu::format("CPU engine {} threads", wo.engine.threads), c16, double(cpu_small.size()), "B",
           true);
  b.info("word count CPU engine 2 threads GB/s", cpu_small.size() / c2.median / 1e9);
  b.info(gpu::format("word count CPU engine {} threads GB/s", wo.engine.threads), cpu_small.size() / c16.median / 1e9);
  gpu_wordcount(b, text, mapreduce::wordcount(text, wo));  // the reference: CPU, all threads
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("mapreduce", argc, argv);
  if (gpu_count() == 0) return cpu_only(b);
  const int lg = int(b.get_int("--max-log2", b.quick() ? 20 : 27));
  Ctx c(b, lg, b.quick() ? 50000 : 1000000);
  if (b.has_flag("--stages")) return stage_report(c);
  if (!b.has_flag("--wordcount-only")) groupby(c);  // the word count lines alone with the flag
  if (b.has_flag("--groupby-only")) return b.finish();
  wordcount(b);
  return b.finish();
}
