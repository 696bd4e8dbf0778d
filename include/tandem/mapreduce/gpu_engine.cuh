// The chained GPU MapReduce engine: unified shared/global memory management. Include from .cu
// files only. Its device side (entries, state, job hooks, kernels) is detail/gpu_engine_kernels.cuh.
//
//   Bs blocks x N threads. Every block owns an intermediate table in global memory: buckets[] (chain
//   heads) and gm_pool[] (entries), the pool split into one allocation range per 32-thread group
//   (gm_offset[gid] = gm_size*gid/num_groups), plus a block-wide tail range when a group's range is
//   full, plus a global spill list when the block is full. Pairs are never dropped: a full spill
//   list is counted, and the whole job is run again with larger buffers.
//   1. Sampling pass over records [0, M*p): reduce into the block tables with a reduction count.
//      Merge every block table into the global result table (buckets + pool, entry counts kept).
//   2. Hot keys: the H most frequent keys of the result (H = hot fraction of its distinct keys).
//   3. Main pass over [M*p, M): each block preloads the H hot keys into sm_pool (shared memory; an
//      entry reference with the mem_flag bit set), finds keys in shared memory first, then in its
//      global table; new keys take sm_pool space until it is full (sm_flag), global space after.
//      At the end each block flushes sm_pool into the result; the block tables are merged.
//   The sampled records' partial results stay in the result table: every record is reduced once.
//
// With block_tables = false the global tier is the result table itself (cold keys are reduced
// straight into it; on GPUs with a large L2 this is faster than per-block tables).
//
// A GPU job: key_type (trivially copyable), value_type, map(i, emit) and reduce(a, b) as for the CPU
// engine, callable on the device, plus identity() -> value_type. Optional: hash(k), equal(a, b),
// atomic_reduce(value_type* dst, const value_type& v) (else: atomicAdd for u64 values, field-wise
// atomics for Agg<A>, and a 64-bit CAS loop around reduce for other 8-byte values).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <string>
#include <string_view>

#include "tandem/core/device.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/device_scratch.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/mapreduce/detail/gpu_engine_kernels.cuh"

namespace tandem::mapreduce::gpu_engine {

// ---- host side (the device side: detail/gpu_engine_kernels.cuh) ---------------------------------

using ::tandem::gpu::DeviceResult;
using ::tandem::gpu::Scratch;
using ::tandem::gpu::to_host;

struct Plan {
  int blocks, threads;
  double p, hot_fraction;
  std::uint32_t sm_n, sm_nb;
  std::size_t smem_bytes;
  std::uint32_t block_pool_n, block_nb;
  std::uint32_t spill_cap;
  std::uint32_t result_cap, result_nb;
  bool hot, direct;
};

template <class K, class V>
std::size_t shared_bytes(int threads, std::uint32_t sm_nb, std::uint32_t sm_n) {
  const std::size_t groups = (threads + 31) / 32;
  std::size_t b = groups * 8 + 16 + 16 + std::size_t(sm_nb) * 4;
  b = (b + 15) & ~std::size_t(15);
  return b + std::size_t(sm_n) * sizeof(Entry<K, V>);
}

template <class Job>
class Engine {
 public:
  using K = typename Job::key_type;
  using V = typename Job::value_type;
  using E = Entry<K, V>;

  // Runs the job over records [0, M). The compact result stays on the device.
  DeviceResult<K, V> run_device(const Job& job, std::uint64_t M, const Options& o, EngineStats& st, Report& rep,
                                cudaStream_t stream = nullptr) {
    Plan pl = plan(M, o);
    for (int attempt = 0;; ++attempt) {
      if (attempt > 12) throw Error("mapreduce GPU engine: buffers kept overflowing after 12 retries");
      if (attempt_once(job, M, pl, st, rep, stream)) {
        st.retries = attempt;
        break;
      }
      // Something found no space: run again from scratch with larger buffers.
      rep.note(
          gpu::format("retry {}: a buffer overflowed (spill list {} entries, block pool {}, result {}); doubling them",
                      attempt + 1, pl.spill_cap, pl.block_pool_n, pl.result_cap));
      pl.spill_cap = grow32(pl.spill_cap, 4);
      pl.block_pool_n = grow32(pl.block_pool_n, 2);
      pl.result_cap = grow32(pl.result_cap, 2);
    }
    return {keys_out_, values_out_, n_out_};
  }

  // Picks the table mode for Tables::auto_: cached, else measured (both modes once, the job run
  // twice more) when the job is large enough, else direct.
  Options resolve(const Job& job, std::uint64_t M, const Options& o, Report& rep, cudaStream_t stream) {
    Options r = o;
    if (o.tables != Options::Tables::auto_) return r;
    r.tables = Options::Tables::direct;
    if (!o.tune || M < o.tune_min_records) return r;
    int dev = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    const auto gpus = gpu_info();
    const std::string gkey = dev < int(gpus.size()) ? gpus[dev].key() : std::string("gpu");
    const std::string cls = gpu::format("k{}v{}/{}/hot{}", sizeof(K), sizeof(V), size_class(M), o.hot_keys ? 1 : 0);
    auto& cache = TuningCache::global();
    auto parse = [](const nlohmann::json& j) {
      const std::string t = j.at("tables").get<std::string>();
      if (t != "block" && t != "direct") throw std::out_of_range("tables = " + t + " (expected block or direct)");
      return t;
    };
    if (auto t = cache.lookup("mapreduce.tables", gkey, cls, parse, &rep)) {
      r.tables = *t == "block" ? Options::Tables::block : Options::Tables::direct;
      rep.note(gpu::format("table mode {} from the tuning cache ({})", *t, cls));
      return r;
    }
    std::vector<Candidate> cands{{"tables=direct", {{"tables", "direct"}}}, {"tables=block", {{"tables", "block"}}}};
    auto res = Tuner().repetitions(1).warmup(0).run(cands, [&](const Candidate& c) {
      Options t = o;
      t.tables = c.params["tables"].get<std::string>() == "block" ? Options::Tables::block : Options::Tables::direct;
      EngineStats st;
      Report scratch;
      TANDEM_CUDA(cudaStreamSynchronize(stream));
      Stopwatch w;
      run_device(job, M, t, st, scratch, stream);
      TANDEM_CUDA(cudaStreamSynchronize(stream));
      return w.seconds();
    });
    const auto& win = res.winner();
    r.tables =
        win.candidate.params["tables"].get<std::string>() == "block" ? Options::Tables::block : Options::Tables::direct;
    cache.put("mapreduce.tables", gkey, cls, win.candidate.params);
    rep.note(gpu::format("tuned table mode ({}): {}", cls, res.report()));
    return r;
  }

  std::vector<std::pair<K, V>> run(const Job& job, std::uint64_t M, const Options& o_in, EngineStats& st, Report& rep) {
    gpu::Stream stream;
    const Options o = resolve(job, M, o_in, rep, stream);
    return to_host(run_device(job, M, o, st, rep, stream), rep, stream);
  }

 private:
  static std::uint32_t grow32(std::uint64_t x, int f) {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(x, 16) * f, 0x7fff0000ull));
  }

  Plan plan(std::uint64_t M, const Options& o) {
    int dev = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    TANDEM_CUDA(cudaGetDeviceProperties(&prop, dev));
    Plan pl{};
    pl.threads = o.block_threads > 0 ? (o.block_threads + 31) / 32 * 32 : 512;
    pl.threads = std::min(pl.threads, prop.maxThreadsPerBlock);
    pl.hot = o.hot_keys;
    pl.direct = o.tables != Options::Tables::block;
    pl.p = o.sample_fraction >= 0 ? std::min(o.sample_fraction, 0.5) : 0.01;
    pl.hot_fraction = o.hot_fraction >= 0 ? std::min(o.hot_fraction, 1.0) : 0.10;
    // Shared pool: what fits in ~96 KiB (two blocks of 512 threads per SM), or as asked.
    const std::size_t optin = prop.sharedMemPerBlockOptin;
    if (o.shared_entries) {
      pl.sm_n = static_cast<std::uint32_t>(o.shared_entries);
      pl.sm_nb = std::bit_ceil(std::max<std::uint32_t>(pl.sm_n, 2));
    } else {
      const std::size_t budget = std::min<std::size_t>(optin, 96 * 1024) - 1024;
      pl.sm_nb = std::bit_floor(static_cast<std::uint32_t>(budget / (sizeof(E) + 4)));
      pl.sm_n = static_cast<std::uint32_t>((budget - pl.sm_nb * 4) / sizeof(E));
    }
    if (!pl.hot) pl.sm_n = 0, pl.sm_nb = 1;
    pl.smem_bytes = shared_bytes<K, V>(pl.threads, pl.sm_nb, pl.sm_n);
    if (pl.smem_bytes > optin)
      throw UsageError(gpu::format("shared pool of {} entries needs {} bytes of shared memory; the GPU has {}", pl.sm_n,
                                   pl.smem_bytes, optin));
    if (o.blocks > 0) {
      pl.blocks = o.blocks;
    } else {
      int per_sm = 1;
      auto k = pl.hot ? reinterpret_cast<const void*>(pass_kernel<Job, false, true>)
                      : reinterpret_cast<const void*>(pass_kernel<Job, false, false>);
      gpu::allow_dynamic_shared(k, pl.smem_bytes);
      TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, pl.threads, pl.smem_bytes));
      pl.blocks = std::max(1, per_sm) * prop.multiProcessorCount;
    }
    // Block pools: the records a block sees in the main pass bound its distinct keys; cap memory.
    const std::uint64_t per_block = M / std::max(1, pl.blocks) + 64;
    pl.block_pool_n = o.block_pool_entries ? static_cast<std::uint32_t>(o.block_pool_entries)
                                           : static_cast<std::uint32_t>(std::min<std::uint64_t>(per_block, 1u << 16));
    if (pl.direct) pl.block_pool_n = 0;
    pl.spill_cap = o.spill_entries ? static_cast<std::uint32_t>(o.spill_entries)
                                   : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(M / 16, 1 << 16, 1u << 26));
    pl.result_cap = o.result_entries ? static_cast<std::uint32_t>(o.result_entries)
                                     : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(M / 4, 1 << 16, 1u << 28));
    return pl;
  }

  void set_state(const Plan& pl) {
    s_.block_nb = std::bit_ceil(std::max<std::uint32_t>(pl.block_pool_n / 2, 1));
    s_.block_pool_n = pl.block_pool_n;
    s_.block_buckets = block_buckets_.get<std::uint32_t>(std::size_t(pl.blocks) * s_.block_nb);
    s_.block_pool = block_pool_.get<E>(std::size_t(pl.blocks) * std::max<std::uint32_t>(pl.block_pool_n, 1));
    s_.block_used = block_used_.get<std::uint32_t>(pl.blocks);
    s_.spill = spill_.get<E>(pl.spill_cap);
    s_.spill_cap = pl.spill_cap;
    s_.ctr = ctr_.get<Counters>(1);
    s_.sm_n = pl.sm_n;
    s_.sm_nb = pl.sm_nb;
    s_.direct = pl.direct;
  }

  void alloc_result(std::uint32_t cap, std::uint32_t nb, bool second) {
    auto& b = second ? result_buckets2_ : result_buckets_;
    auto& p = second ? result_pool2_ : result_pool_;
    s_.result.buckets = b.template get<std::uint32_t>(nb);
    s_.result.pool = p.template get<E>(cap);
    s_.result.mask = nb - 1;
    s_.result_cap = cap;
    result_second_ = second;
  }

  Counters read_counters(cudaStream_t stream) {
    Counters c{};
    TANDEM_CUDA(cudaMemcpyAsync(&c, s_.ctr, sizeof(c), cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    return c;
  }

  // Makes sure the result can take `incoming` more entries; rehashes into a larger table if not.
  void ensure_result(std::uint64_t incoming, const Job& job, EngineStats& st, cudaStream_t stream) {
    Counters c = read_counters(stream);
    const std::uint64_t used = std::min<std::uint64_t>(c.result_tail, s_.result_cap);
    if (used + incoming <= s_.result_cap) return;
    const std::uint32_t old_nb = s_.result.mask + 1;
    const Chain<K, V> old = s_.result;
    const std::uint32_t cap =
        grow32(std::max<std::uint64_t>(used + incoming, std::uint64_t(s_.result_cap) * 2) / 2 + 1, 2);
    const std::uint32_t nb = std::bit_ceil(std::max<std::uint32_t>(cap / 2, 1024));
    alloc_result(cap, nb, !result_second_);
    TANDEM_CUDA(cudaMemsetAsync(s_.result.buckets, 0xFF, std::size_t(nb) * 4, stream));
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->result_tail, 0, sizeof(unsigned int), stream));
    merge_chains_kernel<Job>
        <<<gpu::grid_for(old_nb, 256, kGridCap), 256, 0, stream>>>(job, s_, old.buckets, old.pool, old_nb, old_nb, 0);
    TANDEM_CUDA_LAUNCH("mapreduce result grow");
    ++st.result_grows;
  }

  static constexpr std::uint64_t kGridCap = 65535;  // merge and extract kernels loop over the rest

  // Merges the block tables and the spill list into the result, growing it first when needed.
  void merge_all(const Job& job, const Plan& pl, EngineStats& st, cudaStream_t stream) {
    std::vector<std::uint32_t> used(pl.blocks, 0);
    std::uint64_t incoming = 0;
    if (!pl.direct) {
      TANDEM_CUDA(cudaMemcpyAsync(used.data(), s_.block_used, used.size() * 4, cudaMemcpyDeviceToHost, stream));
    }
    Counters c = read_counters(stream);
    for (auto u : used) incoming += u;
    const std::uint32_t spilled = std::min<std::uint32_t>(c.spill_n, s_.spill_cap);
    incoming += spilled;
    ensure_result(incoming, job, st, stream);
    if (!pl.direct) {
      const std::uint64_t nbk = std::uint64_t(pl.blocks) * s_.block_nb;
      merge_chains_kernel<Job><<<gpu::grid_for(nbk, 256, kGridCap), 256, 0, stream>>>(
          job, s_, s_.block_buckets, s_.block_pool, nbk, s_.block_nb, s_.block_pool_n);
      TANDEM_CUDA_LAUNCH("mapreduce merge block tables");
    }
    if (spilled) {
      merge_list_kernel<Job><<<gpu::grid_for(spilled, 256, kGridCap), 256, 0, stream>>>(job, s_, s_.spill, spilled);
      TANDEM_CUDA_LAUNCH("mapreduce merge spill list");
    }
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->spill_n, 0, sizeof(unsigned int), stream));
  }

  template <bool Sampling, bool UseShared>
  void launch_pass(const Job& job, const Plan& pl, std::uint64_t b, std::uint64_t e, cudaStream_t stream) {
    if (e <= b) return;
    if (!pl.direct)
      TANDEM_CUDA(cudaMemsetAsync(s_.block_buckets, 0xFF, std::size_t(pl.blocks) * s_.block_nb * 4, stream));
    const std::size_t smem = UseShared ? pl.smem_bytes : shared_bytes<K, V>(pl.threads, 1, 0);
    auto k = pass_kernel<Job, Sampling, UseShared>;
    gpu::allow_dynamic_shared(reinterpret_cast<const void*>(k), smem);
    k<<<pl.blocks, pl.threads, smem, stream>>>(job, s_, b, e);
    TANDEM_CUDA_LAUNCH("mapreduce pass");
  }

  bool attempt_once(const Job& job, std::uint64_t M, const Plan& pl, EngineStats& st, Report& rep,
                    cudaStream_t stream) {
    gpu::Event t0, t1, t2, t3, t4;
    t0.record(stream);
    set_state(pl);
    alloc_result(pl.result_cap, std::bit_ceil(std::max<std::uint32_t>(pl.result_cap / 2, 1024)), false);
    TANDEM_CUDA(cudaMemsetAsync(s_.ctr, 0, sizeof(Counters), stream));
    TANDEM_CUDA(cudaMemsetAsync(s_.result.buckets, 0xFF, std::size_t(s_.result.mask + 1) * 4, stream));
    s_.hot = nullptr;
    s_.hot_n = 0;
    st = EngineStats{};
    st.records = M;
    st.blocks = pl.blocks;
    st.block_threads = pl.threads;
    st.sample_fraction = pl.p;
    st.hot_fraction = pl.hot_fraction;
    st.shared_entries = pl.sm_n;
    st.block_pool_entries = pl.block_pool_n;
    st.spill_entries = pl.spill_cap;
    st.block_tables = !pl.direct;
    st.hot_path = pl.hot;
    // 1. sampling pass over [0, Ms)
    const std::uint64_t Ms = pl.hot ? std::min<std::uint64_t>(M, static_cast<std::uint64_t>(double(M) * pl.p)) : 0;
    st.sampled_records = Ms;
    if (Ms) {
      if (pl.direct) ensure_result(std::min<std::uint64_t>(Ms * 4, 0x7fff0000ull), job, st, stream);
      launch_pass<true, false>(job, pl, 0, Ms, stream);
      merge_all(job, pl, st, stream);
    }
    t1.record(stream);
    // 2. hot keys: the H most frequent keys of the sample
    std::uint32_t H = 0;
    if (Ms) H = select_hot(job, pl, st, stream);
    t2.record(stream);
    // 3. main pass over [Ms, M)
    if (pl.hot) launch_pass<false, true>(job, pl, Ms, M, stream);
    else launch_pass<false, false>(job, pl, Ms, M, stream);
    t3.record(stream);
    merge_all(job, pl, st, stream);
    Counters c = read_counters(stream);
    st.shared_hits = c.shared_hits;
    st.global_hits = c.global_hits;
    st.spilled = c.spilled;
    if (c.lost) return false;
    // 4. compact the result
    const std::uint32_t cap = std::min<std::uint32_t>(c.result_tail, s_.result_cap);
    keys_out_ = keys_.get<K>(cap);
    values_out_ = values_.get<V>(cap);
    std::uint32_t* counts = counts_.get<std::uint32_t>(cap);
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->out_n, 0, sizeof(unsigned int), stream));
    extract_kernel<K, V><<<gpu::grid_for(s_.result.mask + 1, 256, kGridCap), 256, 0, stream>>>(
        s_.result, s_.result.mask + 1, s_.ctr, keys_out_, values_out_, counts, cap);
    TANDEM_CUDA_LAUNCH("mapreduce extract");
    t4.record(stream);
    c = read_counters(stream);
    if (c.out_n > cap) throw Error("mapreduce GPU engine: internal error, more result entries than allocated");
    n_out_ = c.out_n;
    st.distinct = n_out_;
    (void)H;
    rep.add("GPU sampling pass + merge", "gpu0", t1.seconds_since(t0), gpu::format("{} records", Ms));
    rep.add("GPU hot-key selection", "gpu0", t2.seconds_since(t1), gpu::format("H={}", st.hot_keys));
    rep.add("GPU main pass", "gpu0", t3.seconds_since(t2), gpu::format("{} records", M - Ms));
    rep.add("GPU merge + compact", "gpu0", t4.seconds_since(t3), gpu::format("{} groups", n_out_));
    return true;
  }

  // Sorts the sampled result by reduction count (CUB radix sort) and keeps the top H keys.
  std::uint32_t select_hot(const Job& job, const Plan& pl, EngineStats& st, cudaStream_t stream) {
    (void)job;
    Counters c = read_counters(stream);
    if (c.lost) return 0;
    const std::uint32_t cap = std::min<std::uint32_t>(c.result_tail, s_.result_cap);
    if (cap == 0) return 0;
    K* keys = keys_.get<K>(cap);
    V* vals = values_.get<V>(cap);
    std::uint32_t* counts = counts_.get<std::uint32_t>(cap * 2);
    K* keys_sorted = hot_.get<K>(cap);
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->out_n, 0, sizeof(unsigned int), stream));
    extract_kernel<K, V><<<gpu::grid_for(s_.result.mask + 1, 256, kGridCap), 256, 0, stream>>>(
        s_.result, s_.result.mask + 1, s_.ctr, keys, vals, counts, cap);
    TANDEM_CUDA_LAUNCH("mapreduce extract sample");
    c = read_counters(stream);
    const std::uint32_t n = std::min(c.out_n, cap);
    std::size_t temp = 0;
    std::uint32_t* counts_sorted = counts + cap;
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp, counts, counts_sorted, keys, keys_sorted,
                                                          int(n), 0, 32, stream));
    void* tmp = temp_.get<unsigned char>(temp);
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(tmp, temp, counts, counts_sorted, keys, keys_sorted, int(n),
                                                          0, 32, stream));
    std::uint32_t H = static_cast<std::uint32_t>(std::ceil(pl.hot_fraction * n));
    H = std::min({H, n, pl.sm_n});
    std::vector<std::uint32_t> top(H);
    if (H) TANDEM_CUDA(cudaMemcpyAsync(top.data(), counts_sorted, std::size_t(H) * 4, cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    std::uint64_t hot_pairs = 0;
    for (auto x : top) hot_pairs += x;
    st.hot_keys = H;
    st.hot_share = st.sampled_records ? double(hot_pairs) / double(std::max<std::uint64_t>(1, st.sampled_records)) : 0;
    s_.hot = keys_sorted;
    s_.hot_n = H;
    return H;
  }

  State<K, V> s_{};
  Scratch block_buckets_, block_pool_, block_used_, spill_, ctr_, result_buckets_, result_pool_, result_buckets2_,
      result_pool2_, keys_, values_, counts_, hot_, temp_;
  bool result_second_{false};
  K* keys_out_{nullptr};
  V* values_out_{nullptr};
  std::size_t n_out_{0};
};

}  // namespace tandem::mapreduce::gpu_engine
