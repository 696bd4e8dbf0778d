// The hash group-by's engine: sequences the passes on a workspace (context.hpp), sized by the plan
// (plan.hpp), with the kernels of kernels.cuh.
//
//   1. Sampling pass over the first p% of the records: aggregate them into a sample table (never
//      overflows: 2x the sample size), compact it to arrays with each key's sampled count and a
//      histogram of the counts. One host round trip here: the sizes below need the counts.
//   2. The global table is sized table_factor x the distinct estimate from the histogram
//      (distinct_estimate.hpp: Good–Turing's upper bound while the table stays within half the L2
//      cache, else Chao1's D_s + f1^2/2f2) and the sample's aggregates are merged into it: every
//      record is reduced once.
//   3. Hot keys (choose_hot): every sampled key when all fit in shared memory, else the top H by
//      sampled count, picked by a count threshold read off the histogram (no sort; CUB radix sort
//      only when more than H keys share the top bin). Too small a share of the sample: none.
//   4. Main pass over the rest, grid = SMs x blocks per SM: each block preloads the hot keys into
//      its shared table; a key found there is reduced with a shared atomic, any other goes to the
//      global table. At the end each block flushes its shared aggregates. Counts with many cold
//      keys take the partitioned tier instead (partition_plan.hpp; partition_reduce_kernel).
//   5. Compact the table to arrays. Second host round trip: the counters (overflow, entries).
// Integer keys of a small range take the dense-range path instead (dense_engine.hpp): no
// hashing, and the groups come out in key order.
// Nothing is lost: an insert that finds no slot within the probe limit goes to an overflow list;
// after the pass the table is grown (rehashed into one large enough for everything) and the list
// merged. Only if the overflow list itself fills is the whole job rerun with a table and list 4x
// larger (reported as a retry). The all-ones key (the empty marker) has its own accumulator.
#include "groupby/hash/engine.hpp"

#include <algorithm>
#include <bit>
#include <span>
#include <string>

#include <cub/device/device_radix_sort.cuh>

#include "groupby/hash/dense_engine.hpp"
#include "groupby/hash/kernels.cuh"
#include "groupby/hash/two_choice.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/distinct_estimate.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::hash_groupby {

namespace {

template <class K, class V>
using PassFn = void (*)(PassArgs<K, V>);

// The pass kernel of a mode (kHotMatch exists for counts only); `part`: with the partitioned cold
// tier (counts; kGlobal and the hot modes but kHotTwoChoice).
template <class K, class V>
PassFn<K, V> pass_function(int mode, bool part) {
  if (part) {
    if constexpr (Traits<K, V>::kCount) {
      switch (mode) {
        case kGlobal: return pass_kernel<K, V, kGlobal, true>;
        case kHot: return pass_kernel<K, V, kHot, true>;
        case kHotMatch: return pass_kernel<K, V, kHotMatch, true>;
        case kHotBuckets: return pass_kernel<K, V, kHotBuckets, true>;
        case kHotBucketsMatch: return pass_kernel<K, V, kHotBucketsMatch, true>;
        default: break;
      }
    }
    throw Error("hash group-by: internal error, no partitioned pass for this mode");
  }
  switch (mode) {
    case kHot: return pass_kernel<K, V, kHot>;
    case kDynamic: return pass_kernel<K, V, kDynamic>;
    case kHotTwoChoice: return pass_kernel<K, V, kHotTwoChoice>;
    case kHotBuckets: return pass_kernel<K, V, kHotBuckets>;
    case kHotMatch:
      if constexpr (Traits<K, V>::kCount) return pass_kernel<K, V, kHotMatch>;
      else throw Error("hash group-by: internal error, lanes grouped by key outside a count");
    case kHotBucketsMatch:
      if constexpr (Traits<K, V>::kCount) return pass_kernel<K, V, kHotBucketsMatch>;
      else throw Error("hash group-by: internal error, lanes grouped by key outside a count");
    default: return pass_kernel<K, V, kGlobal>;
  }
}

template <class K, class V>
void launch_pass(int mode, const PassArgs<K, V>& args, int blocks, int threads, std::size_t smem, cudaStream_t stream,
                 bool part = false) {
  const PassFn<K, V> k = pass_function<K, V>(mode, part);
  gpu::allow_dynamic_shared(reinterpret_cast<const void*>(k), smem);
  k<<<blocks, threads, smem, stream>>>(args);
  TANDEM_CUDA_LAUNCH("hash group-by: pass");
}

template <class K, class V>
void init_table(const TableRef<K, V>& t, cudaStream_t stream) {
  init_table_kernel<K, V>
      <<<gpu::grid_for(t.cap, tuning::kHelperThreads, tuning::kGridCap), tuning::kHelperThreads, 0, stream>>>(t);
  TANDEM_CUDA_LAUNCH("hash group-by: init table");
}

// Launches the merge of n pairs into t (the caller checks the launch, naming what it merged).
template <class K, class V>
void merge(const TableRef<K, V>& t, const K* keys, const typename Traits<K, V>::Acc* accs, std::uint32_t n,
           std::uint32_t limit, const Sink<K, V>& sink, cudaStream_t stream) {
  merge_kernel<K, V><<<gpu::grid_for(n, tuning::kHelperThreads, tuning::kGridCap), tuning::kHelperThreads, 0, stream>>>(
      t, keys, accs, n, limit, sink);
}

template <class K, class V>
void compact(const TableRef<K, V>& t, K* ok, typename Traits<K, V>::Acc* oa, std::uint32_t out_cap, Ctr* ctr,
             cudaStream_t stream) {
  compact_kernel<K, V, false><<<compact_grid(t.cap), kCompactThreads, 0, stream>>>(t, ok, oa, nullptr, out_cap, ctr,
                                                                                   nullptr, 0, nullptr, nullptr);
  TANDEM_CUDA_LAUNCH("hash group-by: compact");
}

}  // namespace

template <class K, class V>
struct Engine<K, V>::Attempt {
  using Slot = slot_t<K, V>;
  const K* keys;
  const VIn* values;
  std::uint64_t M;
  const HashPlan& pl;
  EngineStats& st;
  Report& rep;
  cudaStream_t stream;
  gpu::Event t0{}, t1{}, t2{}, t3{}, t3b{}, t4{};
  Acc* sent{nullptr};
  Sink<K, V> sink{};
  // 1. the sample
  std::uint64_t Ms{0};
  std::uint32_t cap_s{0}, Ds{0};
  K* sk{nullptr};  // its keys, aggregates and counts (compacted)
  Acc* sa{nullptr};
  std::uint32_t* sc{nullptr};
  K* top{nullptr};  // keys holding >= 1/16 of the sample, and their number
  std::uint32_t* top_n{nullptr};
  Ctr c1{};
  const std::uint32_t* hh{nullptr};  // the count histogram (host)
  double est{0};
  // 2. the global table
  TableRef<K, V> t{};
  std::uint32_t limit{0};
  // 3. hot keys and the shared table
  std::uint32_t H{0}, S{0}, C{1}, tc_seed{0};
  const K* hot{nullptr};
  const K* tc{nullptr};  // two-choice table on the device
  std::size_t smem{0}, budget{0}, free_b{0};
  bool all_hot{false}, use_buckets{false}, may_partition{false};
  double cold_max{0};
  // 4. the partitioned cold tier and the main pass
  PartitionLayout pp{};
  PartRef<K> part{};
  int blocks{0};
  std::uint32_t n{0};  // 5. groups

  // The partitioned tier's inputs: the part buffer held already counts as free.
  ColdTier cold_inputs(std::size_t part_buffer, std::size_t optin) const {
    return ColdTier{M, Ms, est, pl.threads, sizeof(K), free_b + part_buffer, optin};
  }
};

template <class K, class V>
gpu::DeviceResult<K, typename Engine<K, V>::Acc> Engine<K, V>::run_device(const K* keys, const VIn* values,
                                                                          std::uint64_t M, const Options& o,
                                                                          EngineStats& st, Report& rep,
                                                                          cudaStream_t stream) {
  if (M >= (std::uint64_t{1} << 32)) throw UsageError("hash group-by: 2^32 records or more (use the chained engine)");
  opts_ = o;
  std::string dense_why = "off";
  if (o.dense_range) {
    DenseEngine<K, V> dense(dev_, ws_);
    if (auto r = dense.run(keys, values, M, st, rep, stream)) return *r;
    dense_why = dense.why_not();
  }
  HashPlan pl = resolve(keys, values, M, rep, stream);
  for (int attempt = 0;; ++attempt) {
    if (attempt > tuning::kMaxRetries) throw Error("hash group-by: the table kept overflowing after 12 retries");
    if (attempt_once(keys, values, M, pl, st, rep, stream)) {
      st.retries = attempt;
      st.dense_note = dense_why;
      return {out_keys_, out_accs_, n_out_};
    }
    rep.note(gpu::format("retry {}: the overflow list filled (table {} slots, list {}); rerunning with both 4x larger",
                         attempt + 1, st.table_slots, st.spill_entries));
    pl = plan_after_overflow(pl, st.table_slots, st.spill_entries);
  }
}

template <class K, class V>
std::vector<std::pair<K, typename Engine<K, V>::Acc>> Engine<K, V>::run(const K* keys, const VIn* values,
                                                                        std::uint64_t M, const Options& o,
                                                                        EngineStats& st, Report& rep,
                                                                        cudaStream_t stream) {
  return gpu::to_host(run_device(keys, values, M, o, st, rep, stream), rep, stream);
}

// The plan: from the options, or tuned (Tuner + TuningCache, op "mapreduce.hash") on the first
// large job of a problem class when the options leave it open.
template <class K, class V>
HashPlan Engine<K, V>::resolve(const K* keys, const VIn* values, std::uint64_t M, Report& rep, cudaStream_t stream) {
  const HashPlan base = plan_from(opts_);
  if (!opts_.tune || options_fix_plan(opts_) || M < opts_.tune_min_records) return base;
  return tune(keys, values, M, base, rep, stream);
}

template <class K, class V>
HashPlan Engine<K, V>::tune(const K* keys, const VIn* values, std::uint64_t M, const HashPlan& base, Report& rep,
                            cudaStream_t stream) {
  // The problem class includes the cardinality seen by a small sample (the first 2^16 records).
  const std::uint64_t m = std::min<std::uint64_t>(M, tuning::kClassSample);
  const int card = tuning::cardinality_class(sample_distinct(keys, m, stream), m);
  const auto gpus = gpu_info();
  const std::string gkey = dev_.id < int(gpus.size()) ? gpus[dev_.id].key() : std::string("gpu");
  const std::string cls = tuning::problem_class(sizeof(K), sizeof(Acc), M, card, opts_.hot_keys);
  auto& cache = TuningCache::global();
  auto parse = [&](const nlohmann::json& j) { return tuning::checked_plan(base, j); };
  if (auto p = cache.lookup("mapreduce.hash", gkey, cls, parse, &rep)) {
    rep.note(gpu::format("hash group-by parameters from the tuning cache ({}): {}", cls, p->label()));
    return *p;
  }
  auto res = Tuner().repetitions(3).warmup(1).run(tuning::candidates(T::kCount, opts_, card), [&](const Candidate& c) {
    EngineStats st;
    Report scratch;
    const HashPlan p = tuning::plan_from_params(base, c.params);
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    Stopwatch w;
    if (!attempt_once(keys, values, M, p, st, scratch, stream)) return 1e9;  // overflowed: not a winner
    return w.seconds();
  });
  const auto& win = res.winner();
  cache.put("mapreduce.hash", gkey, cls, win.candidate.params);
  rep.note(gpu::format("tuned hash group-by ({}):\n{}", cls, res.report()));
  return tuning::plan_from_params(base, win.candidate.params);
}

// Distinct keys among the first m records (for the tuning class): one kernel over a key set
// (memset to the empty marker) that counts its inserts, one round trip.
template <class K, class V>
std::uint64_t Engine<K, V>::sample_distinct(const K* keys, std::uint64_t m, cudaStream_t stream) {
  ctr_ = ws_.ctr.get<Ctr>(1);
  TANDEM_CUDA(cudaMemsetAsync(ctr_, 0, sizeof(Ctr), stream));
  const std::uint32_t cap = sample_slots(m);
  K* set = ws_.sample_keys.get<K>(cap);
  TANDEM_CUDA(cudaMemsetAsync(set, 0xff, std::size_t(cap) * sizeof(K), stream));
  count_distinct_kernel<K>
      <<<gpu::grid_for(m, tuning::kHelperThreads, tuning::kGridCap), tuning::kHelperThreads, 0, stream>>>(keys, m, set,
                                                                                                          cap, ctr_);
  TANDEM_CUDA_LAUNCH("hash group-by: distinct keys of a small sample");
  return read_ctr(stream).out_n;
}

// The counters (and with `hist`, the sample's count histogram into the workspace), through pinned
// memory: a pageable copy costs more than the small kernels. With `keys`, also the first `nkeys`
// of them (speculatively: the sample's keys before its size is known, for a two-choice table).
template <class K, class V>
Ctr Engine<K, V>::read_ctr(cudaStream_t stream, const std::uint32_t* hist, const K* keys, std::uint32_t nkeys) {
  if (!ws_.ctr_host.data()) ws_.ctr_host = gpu::PinnedBuffer<Ctr>(1);
  TANDEM_CUDA(cudaMemcpyAsync(ws_.ctr_host.data(), ctr_, sizeof(Ctr), cudaMemcpyDeviceToHost, stream));
  if (hist) {
    if (!ws_.hist_host.data()) ws_.hist_host = gpu::PinnedBuffer<std::uint32_t>(kBins);
    TANDEM_CUDA(
        cudaMemcpyAsync(ws_.hist_host.data(), hist, kBins * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream));
  }
  if (keys && nkeys) {
    if (!ws_.keys_host.data()) ws_.keys_host = gpu::PinnedBuffer<std::uint64_t>(tuning::kTwoChoiceMax);
    TANDEM_CUDA(cudaMemcpyAsync(ws_.keys_host.data(), keys, std::min(nkeys, tuning::kTwoChoiceMax) * sizeof(K),
                                cudaMemcpyDeviceToHost, stream));
  }
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return ws_.ctr_host[0];
}

template <class K, class V>
bool Engine<K, V>::attempt_once(const K* keys, const VIn* values, std::uint64_t M, const HashPlan& pl, EngineStats& st,
                                Report& rep, cudaStream_t stream) {
  Attempt a{keys, values, M, pl, st, rep, stream};
  start(a);
  sampling_pass(a);
  global_table(a);
  choose_hot_keys(a);
  cold_tier(a);
  main_pass(a);
  if (!compact_result(a)) return false;
  report(a);
  return true;
}

template <class K, class V>
void Engine<K, V>::start(Attempt& a) {
  a.t0.record(a.stream);
  EngineStats& st = a.st;
  st = EngineStats{};
  st.engine = "hash";
  st.records = a.M;
  st.block_threads = a.pl.threads;
  st.sample_fraction = a.pl.p;
  st.hot_fraction = a.pl.hot_fraction;
  st.hot_path = a.pl.hot;
  st.block_tables = false;
  ctr_ = ws_.ctr.get<Ctr>(1);
  TANDEM_CUDA(cudaMemsetAsync(ctr_, 0, sizeof(Ctr), a.stream));
  a.sent = ws_.sentinel.get<Acc>(2);
  const std::uint32_t ovf_cap = overflow_capacity(a.pl, a.M);
  st.spill_entries = ovf_cap;
  a.sink = Sink<K, V>{ws_.overflow_keys.get<K>(ovf_cap), ws_.overflow_accs.get<Acc>(ovf_cap), ovf_cap, ctr_};
}

// 1. Sampling pass over the first p% (all of a small input), compacted with the count histogram.
template <class K, class V>
void Engine<K, V>::sampling_pass(Attempt& a) {
  using Slot = typename Attempt::Slot;
  const cudaStream_t stream = a.stream;
  a.Ms = sample_records(a.M, a.pl.p);
  a.st.sampled_records = a.Ms;
  const std::uint32_t cap_s = a.cap_s = sample_slots(a.Ms);
  TableRef<K, V> ts{ws_.sample_slots.get<Slot>(cap_s), cap_s, a.sent + 1};
  a.sk = ws_.sample_keys.get<K>(std::size_t(cap_s) + 1);
  a.sa = ws_.sample_accs.get<Acc>(std::size_t(cap_s) + 1);
  a.sc = ws_.sample_counts.get<std::uint32_t>(2 * (std::size_t(cap_s) + 1));
  std::uint32_t* hist = ws_.hist.get<std::uint32_t>(kBins);
  TANDEM_CUDA(cudaMemsetAsync(hist, 0, kBins * sizeof(std::uint32_t), stream));
  init_table(ts, stream);
  a.top = ws_.top_keys.get<K>(tuning::kTopKeys);
  a.top_n = ws_.top_n.get<std::uint32_t>(1);
  TANDEM_CUDA(cudaMemsetAsync(a.top_n, 0, sizeof(std::uint32_t), stream));
  {
    using namespace tuning;
    const std::size_t ssm =
        shared_acc_offset(kSampleSharedSlots, sizeof(K)) + (kSampleSharedSlots + 1) * sizeof(typename T::SAcc);
    PassArgs<K, V> p{a.keys,
                     a.values,
                     0,
                     a.Ms,
                     ts,
                     cap_s,
                     a.sink,
                     ctr_,
                     nullptr,
                     0,
                     nullptr,
                     nullptr,
                     kSampleSharedKeys,
                     kSampleSharedSlots,
                     1};
    if (a.pl.hot) launch_pass(kDynamic, p, dev_.sms * kSampleBlocksPerSm, kSampleThreads, ssm, stream);
    else launch_pass(kGlobal, p, dev_.sms * kSampleBlocksPerSmCold, kSampleThreadsCold, 0, stream);
  }
  compact_kernel<K, V, true><<<compact_grid(cap_s), kCompactThreads, 0, stream>>>(
      ts, a.sk, a.sa, a.sc, cap_s + 1, ctr_, hist, top_min_count(a.Ms), a.top, a.top_n);
  TANDEM_CUDA_LAUNCH("hash group-by: compact sample");
  a.c1 = read_ctr(stream, hist, opts_.two_choice && a.pl.hot ? a.sk : nullptr,
                  std::min<std::uint32_t>(cap_s + 1, tuning::kTwoChoiceMax));
  a.hh = ws_.hist_host.data();
  if (a.c1.overflow_n || a.c1.lost || a.c1.out_n > cap_s + 1)
    throw Error("hash group-by: internal error, the sample table overflowed");
  a.Ds = a.c1.out_n;
  TANDEM_CUDA(cudaMemsetAsync(ctr_, 0, sizeof(Ctr), stream));
  a.t1.record(stream);
}

// 2. The global table: table_factor x the distinct estimate, the sample merged in.
template <class K, class V>
void Engine<K, V>::global_table(Attempt& a) {
  using Slot = typename Attempt::Slot;
  const double cheap_keys = l2_keys(dev_.l2, a.pl.table_factor, sizeof(Slot));
  distinct_estimate::Sample sample;
  sample.records = a.Ms;
  sample.total = a.M;
  sample.distinct = a.Ds;
  sample.once = a.hh[1];
  sample.twice = a.hh[2];
  const auto de = distinct_estimate::estimate(sample, cheap_keys);
  a.est = de.keys;
  a.st.sampled_distinct = a.Ds;
  a.st.distinct_estimate = static_cast<std::uint64_t>(de.chao1);
  a.st.distinct_upper = static_cast<std::uint64_t>(de.upper);
  const std::uint32_t cap = table_slots(a.pl, a.est);
  a.st.table_slots = cap;
  a.t = TableRef<K, V>{ws_.table[ws_.current].get<Slot>(cap), cap, a.sent};
  a.limit = probe_limit(cap);
  init_table(a.t, a.stream);
  if (a.Ds) {
    merge(a.t, a.sk, a.sa, a.Ds, a.limit, a.sink, a.stream);
    TANDEM_CUDA_LAUNCH("hash group-by: merge sample");
  }
}

// 3. The hot keys: all sampled keys, the top ones by a threshold, or the top ones sorted.
template <class K, class V>
void Engine<K, V>::choose_hot_keys(Attempt& a) {
  const std::span<const std::uint32_t> hist(a.hh, kBins);
  a.use_buckets = opts_.hot_buckets && a.pl.buckets;
  a.cold_max = cold_max_count(hist, a.c1.big_pairs);
  a.may_partition = T::kCount && opts_.partition_cold && a.pl.partition && a.Ms < a.M;
  std::size_t total_b = 0;
  if (a.may_partition) TANDEM_CUDA(cudaMemGetInfo(&a.free_b, &total_b));
  const bool part_without_hot =
      a.may_partition &&
      partition_plan::plan(partition_inputs(a.cold_inputs(ws_.part_keys.buf.size(), dev_.optin), 0, 0.0, a.cold_max))
          .use;
  if (a.pl.hot && a.Ms < a.M && a.Ds > 0) {
    a.budget = shared_budget(a.pl, dev_.optin);
    const HotInputs in{a.Ds,
                       a.Ms,
                       hist,
                       a.c1.big_pairs,
                       a.budget,
                       opts_.shared_entries,
                       a.use_buckets,
                       a.pl.hot_fraction,
                       part_without_hot,
                       sizeof(K),
                       sizeof(typename T::SAcc)};
    const HotChoice hc = choose_hot(in);
    a.all_hot = hc.pick == HotChoice::Pick::all;
    a.hot = pick_hot(a, hc);
    a.H = hc.keys;
    a.st.hot_share = a.H ? hc.share : 0.0;
    if (a.H) hot_table(a);
  }
  EngineStats& st = a.st;
  st.hot_keys = a.H;
  st.two_choice = a.tc != nullptr;
  st.hot_buckets = a.H > 0 && !a.tc && a.use_buckets;
  st.shared_entries = a.S;
  st.sub_tables = a.C;
  a.t2.record(a.stream);
}

// The chosen hot keys on the device.
template <class K, class V>
const K* Engine<K, V>::pick_hot(Attempt& a, const HotChoice& hc) {
  const cudaStream_t stream = a.stream;
  switch (hc.pick) {
    case HotChoice::Pick::all: return a.sk;  // every sampled key
    case HotChoice::Pick::threshold: {
      a.cold_max = hc.count;  // every key seen more than `count` times is hot
      K* dst = ws_.hot_keys.get<K>(hc.keys);
      select_hot_kernel<K>
          <<<gpu::grid_for(a.Ds, tuning::kHelperThreads, tuning::kGridCap), tuning::kHelperThreads, 0, stream>>>(
              a.sk, a.sc, a.Ds, hc.count, hc.above, hc.equal, dst, ctr_);
      TANDEM_CUDA_LAUNCH("hash group-by: select hot keys");
      return dst;
    }
    case HotChoice::Pick::sort: {  // more keys than wanted in the last bin: sort the counts
      std::uint32_t* counts_sorted = a.sc + (a.cap_s + 1);
      K* sorted = ws_.hot_keys.get<K>(a.Ds);
      const int end_bit = std::max(1, int(std::bit_width(static_cast<std::uint64_t>(a.Ms))));
      std::size_t temp = 0;
      TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp, a.sc, counts_sorted, a.sk, sorted, int(a.Ds),
                                                            0, end_bit, stream));
      void* tmp = ws_.temp.get<unsigned char>(temp);
      TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(tmp, temp, a.sc, counts_sorted, a.sk, sorted, int(a.Ds), 0,
                                                            end_bit, stream));
      return sorted;
    }
    default: return nullptr;
  }
}

// The shared table of the H hot keys: two-choice placement on the host when every sampled key is
// hot and they are few (a table at most a quarter full: placement succeeds at the first or second
// seed), else bucketed or linear probing; then its layout.
template <class K, class V>
void Engine<K, V>::hot_table(Attempt& a) {
  std::uint32_t tc_slots = 0;
  if (a.all_hot && opts_.two_choice && a.Ds <= tuning::kTwoChoiceMax) {
    const std::uint32_t S2 = two_choice_slots(a.Ds);
    std::vector<K>& table = ws_.two_choice_table<K>();
    const K* sampled = reinterpret_cast<const K*>(ws_.keys_host.data());
    a.tc_seed = two_choice::build<K>(std::span<const K>(sampled, a.Ds), S2, T::kEmpty, table);
    if (a.tc_seed) {
      if (!ws_.two_choice_host.data())
        ws_.two_choice_host = gpu::PinnedBuffer<std::uint64_t>(two_choice_slots(tuning::kTwoChoiceMax));
      K* host = reinterpret_cast<K*>(ws_.two_choice_host.data());
      std::copy(table.begin(), table.end(), host);
      K* dst = ws_.two_choice_keys.get<K>(S2);
      TANDEM_CUDA(cudaMemcpyAsync(dst, host, S2 * sizeof(K), cudaMemcpyHostToDevice, a.stream));
      a.tc = dst;
      tc_slots = S2;
    }
  }
  const SharedLayout l = hot_layout(hot_slots(a.H, tc_slots, a.use_buckets), a.pl.threads, a.budget, dev_.optin,
                                    sizeof(K), sizeof(typename T::SAcc));
  a.S = l.slots;
  a.C = l.copies;
  a.smem = l.bytes;
}

// The partitioned cold tier (counts): where the cold keys are many and none is heavy.
template <class K, class V>
void Engine<K, V>::cold_tier(Attempt& a) {
  if constexpr (T::kCount) {
    if (a.may_partition && !a.all_hot) {
      const partition_plan::Inputs in = partition_inputs(a.cold_inputs(ws_.part_keys.buf.size(), dev_.optin), a.H,
                                                         a.H ? a.st.hot_share : 0.0, a.cold_max);
      a.pp = partition_layout(in, a.smem, dev_.optin);
      const partition_plan::Plan& p = a.pp.plan;
      if (p.use) {
        a.part.keys = ws_.part_keys.get<K>(std::size_t(p.partitions) * p.capacity);
        a.part.cursor = ws_.part_cursor.get<std::uint32_t>(p.partitions);
        a.part.cap = p.capacity;
        a.part.bits = p.bits;
        a.part.smem_off = static_cast<std::uint32_t>(a.pp.offset);
        TANDEM_CUDA(cudaMemsetAsync(a.part.cursor, 0, p.partitions * sizeof(std::uint32_t), a.stream));
        a.smem = a.pp.bytes;
      }
    } else {
      a.pp.plan.why = !opts_.partition_cold || !a.pl.partition ? "off"
                      : a.Ms >= a.M                            ? "the sample covers the input"
                                                               : "every sampled key is hot";
    }
  }
  const partition_plan::Plan& p = a.pp.plan;
  a.st.partitions = p.use ? p.partitions : 0;
  a.st.partition_note =
      p.use ? gpu::format("{} partitions of {} keys, reduce tables of {} slots", p.partitions, p.capacity, p.slots)
            : p.why;
}

// 4. The main pass over the rest, then the partitions' reduce.
template <class K, class V>
void Engine<K, V>::main_pass(Attempt& a) {
  const bool use_part = a.pp.plan.use;
  // Counts with a probed hot table: lanes grouped by key first (kHotMatch). Untuned, only where
  // the hot keys are the top of a larger key set (skewed data): with every key hot (few distinct
  // keys, often near-uniform) a warp holds ~32 different keys, match_any costs most and the
  // per-warp sub-tables already keep warps apart (measured 2.6x slower at 128 uniform keys with
  // linear probing).
  const bool match = T::kCount && a.H > 0 && !a.tc && opts_.warp_match && a.pl.warp_match && !a.all_hot;
  a.st.warp_match = match;
  const int mode = pass_mode(a.H > 0, a.tc != nullptr, match, a.st.hot_buckets);
  int per_sm = 1;
  {
    const PassFn<K, V> kf = pass_function<K, V>(mode, use_part);
    gpu::allow_dynamic_shared(reinterpret_cast<const void*>(kf), a.smem);
    TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, a.pl.threads, a.smem));
  }
  a.blocks = main_grid(opts_.blocks, dev_.sms, per_sm, a.pl.blocks_per_sm);
  a.st.blocks = a.blocks;
  if (a.Ms < a.M) {
    PassArgs<K, V> p{a.keys, a.values, a.Ms,    a.M, a.t, a.limit, a.sink, ctr_,      a.hot,
                     a.H,    a.top,    a.top_n, 0,   a.S, a.C,     a.tc,   a.tc_seed, a.part};
    launch_pass(mode, p, a.blocks, a.pl.threads, a.smem, a.stream, use_part);
  }
  a.t3.record(a.stream);
  if constexpr (T::kCount) {
    if (use_part) {
      const partition_plan::Plan& pp = a.pp.plan;
      const std::size_t rsm = partition_reduce_bytes(pp.slots, sizeof(K));
      auto rk = partition_reduce_kernel<K, V>;
      gpu::allow_dynamic_shared(reinterpret_cast<const void*>(rk), rsm);
      rk<<<pp.partitions, tuning::kPartitionReduceThreads, rsm, a.stream>>>(a.part, pp.slots, a.t, a.limit, a.sink,
                                                                            ctr_);
      TANDEM_CUDA_LAUNCH("hash group-by: reduce partitions");
    }
  }
  a.t3b.record(a.stream);
}

// 5. Compact (speculatively: an overflow grows the table and compacts again). False: the overflow
// list filled, the attempt is lost.
template <class K, class V>
bool Engine<K, V>::compact_result(Attempt& a) {
  const std::uint32_t cap = a.t.cap;
  const int o = ws_.current;
  out_keys_ = ws_.out_keys[o].get<K>(std::size_t(cap) + 1);
  out_accs_ = ws_.out_accs[o].get<Acc>(std::size_t(cap) + 1);
  compact(a.t, out_keys_, out_accs_, cap + 1, ctr_, a.stream);
  const Ctr c = read_ctr(a.stream);
  EngineStats& st = a.st;
  st.partitioned = c.part_pairs;
  st.partition_direct = c.part_direct + c.part_missed;
  st.shared_hits = c.shared_hits;
  st.global_hits = c.global_hits + a.Ms;  // the sample went to the sample table in global memory
  if (c.lost) return false;
  a.n = c.out_n;
  if (c.overflow_n && !grow(a, c.overflow_n)) return false;
  a.t4.record(a.stream);
  TANDEM_CUDA(cudaStreamSynchronize(a.stream));
  n_out_ = a.n;
  st.distinct = a.n;
  return true;
}

// Everything (the compacted table + the overflow list) into a table twice what it holds.
template <class K, class V>
bool Engine<K, V>::grow(Attempt& a, std::uint32_t overflowed) {
  using Slot = typename Attempt::Slot;
  const std::uint32_t cap = a.t.cap;
  a.st.spilled = overflowed;
  const std::uint32_t cap2 = grown_slots(a.n, overflowed, cap);
  const int nx = 1 - ws_.current;
  const TableRef<K, V> t2{ws_.table[nx].get<Slot>(cap2), cap2, a.sent + 1};
  init_table(t2, a.stream);
  const Sink<K, V> none{nullptr, nullptr, 0, ctr_};
  merge(t2, out_keys_, out_accs_, a.n, cap2, none, a.stream);
  TANDEM_CUDA_LAUNCH("hash group-by: grow (table)");
  merge(t2, a.sink.keys, a.sink.accs, overflowed, cap2, none, a.stream);
  TANDEM_CUDA_LAUNCH("hash group-by: grow (overflow list)");
  TANDEM_CUDA(cudaMemsetAsync(&ctr_->out_n, 0, sizeof(unsigned), a.stream));
  out_keys_ = ws_.out_keys[nx].get<K>(std::size_t(cap2) + 1);
  out_accs_ = ws_.out_accs[nx].get<Acc>(std::size_t(cap2) + 1);
  compact(t2, out_keys_, out_accs_, cap2 + 1, ctr_, a.stream);
  const Ctr c = read_ctr(a.stream);
  if (c.lost) return false;
  a.n = c.out_n;
  ws_.current = nx;
  a.st.table_slots = cap2;
  a.st.result_grows = 1;
  a.rep.note(
      gpu::format("table grown from {} to {} slots: {} pairs overflowed the probe limit", cap, cap2, overflowed));
  return true;
}

template <class K, class V>
void Engine<K, V>::report(const Attempt& a) {
  Report& rep = a.rep;
  rep.add("GPU sampling pass", "gpu0", a.t1.seconds_since(a.t0), gpu::format("{} records, {} distinct", a.Ms, a.Ds));
  rep.add("GPU table init + sample merge + hot keys", "gpu0", a.t2.seconds_since(a.t1),
          gpu::format("{} slots, H={}", a.t.cap, a.st.hot_keys));
  rep.add("GPU main pass", "gpu0", a.t3.seconds_since(a.t2),
          gpu::format("{} records, {} blocks x {}", a.M - a.Ms, a.blocks, a.pl.threads));
  if (a.pp.plan.use)
    rep.add("GPU partition reduce", "gpu0", a.t3b.seconds_since(a.t3),
            gpu::format("{} partitions, {} keys", a.pp.plan.partitions, a.st.partitioned));
  rep.add("GPU compact", "gpu0", a.t4.seconds_since(a.t3b), gpu::format("{} groups", a.n));
}

template class Engine<std::uint32_t, void>;
template class Engine<std::uint32_t, double>;
template class Engine<std::uint32_t, std::int64_t>;
template class Engine<std::uint64_t, void>;
template class Engine<std::uint64_t, double>;
template class Engine<std::uint64_t, std::int64_t>;

}  // namespace tandem::hash_groupby
