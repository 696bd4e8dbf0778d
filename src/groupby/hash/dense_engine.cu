// The dense-range path's passes (dense_plan.hpp), with the kernels of dense_kernels.cuh:
//   1. min/max of the keys (after a spread sample's, on large inputs: a wide range is ruled out
//      for the price of a few thousand loads). Host round trip: the plan needs the range.
//   2. Partition pass into speculative regions (not when the range fits one block's slots).
//   3. Reduce: each block takes a chunk of one partition (or of the input) into shared
//      accumulators, then adds them into the global table of R accumulators.
//   4. Emit the occupied slots in key order (CUB select), then a round trip for the group count
//      and the overflow flag. A region that overflowed (keys spread unevenly) means the pass
//      counted every partition exactly: regions of that size, and steps 2-4 once more.
#include "groupby/hash/dense_engine.hpp"

#include <algorithm>
#include <tuple>

#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_select.cuh>

#include "groupby/hash/dense_kernels.cuh"
#include "groupby/hash/tuning.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::hash_groupby {

template <class K, class V>
struct DenseEngine<K, V>::Pass {
  const K* keys;
  const VIn* values;
  std::uint64_t M;
  cudaStream_t stream;
  K min{}, max{};
  dense::Plan plan{};
  dense::Regions regions{};
  std::uint16_t* low{nullptr};
  VIn* vals{nullptr};
  Acc* table{nullptr};
  K* out_keys{nullptr};
  Acc* out_accs{nullptr};
  std::uint64_t chunk{0}, reduce_blocks{0};
  unsigned partition_blocks{0};
  std::uint32_t groups{0};
  bool exact{false};  // regions of exactly what the first pass counted
  double first_s{0};  // the overflowed attempt, when there was one
  gpu::Event t0{}, t1{}, t2{}, t3{}, t4{};
};

template <class K, class V>
std::optional<gpu::DeviceResult<K, typename DenseEngine<K, V>::Acc>> DenseEngine<K, V>::run(
    const K* keys, const VIn* values, std::uint64_t M, EngineStats& st, Report& rep, cudaStream_t stream) {
  why_.clear();
  if (M == 0) {
    why_ = "empty input";
    return std::nullopt;
  }
  constexpr std::size_t kSharedAcc = sizeof(typename T::SAcc);
  ctr_ = ws_.ctr.get<Ctr>(1);
  Pass a{keys, values, M, stream};
  a.t0.record(stream);
  if (M >= dense::kSampleFrom) {
    const auto [lo, hi] = min_max(keys, dense::kSampleRecords, M / dense::kSampleRecords, stream);
    if (!dense::range_fits(dense::key_range(lo, hi), M, kSharedAcc)) {
      why_ = gpu::format("a sample of {} keys spans {}..{}", dense::kSampleRecords, lo, hi);
      return std::nullopt;
    }
  }
  std::tie(a.min, a.max) = min_max(keys, M, 1, stream);
  // Free device memory is asked for only when the workspace's buffers would have to grow.
  dense::Inputs in{M, a.min, a.max, kSharedAcc, sizeof(Acc), T::kCount ? 0 : sizeof(VIn), ~std::size_t{0}};
  a.plan = dense::plan(in);
  const std::size_t records = std::size_t(a.plan.partitions) * a.plan.region;
  if (a.plan.use &&
      (a.plan.table_bytes > ws_.dense_table.buf.size() || records * sizeof(std::uint16_t) > ws_.dense_low.buf.size() ||
       records * in.value_bytes > ws_.dense_vals.buf.size())) {
    std::size_t free_b = 0, total_b = 0;
    TANDEM_CUDA(cudaMemGetInfo(&free_b, &total_b));
    in.free_bytes =
        (free_b + ws_.dense_table.buf.size() + ws_.dense_low.buf.size() + ws_.dense_vals.buf.size()) / 5 * 4;
    a.plan = dense::plan(in);
  }
  if (!a.plan.use) {
    why_ = a.plan.why;
    return std::nullopt;
  }
  a.t1.record(stream);
  buffers(a);
  for (;;) {
    TANDEM_CUDA(cudaMemsetAsync(ctr_, 0, sizeof(Ctr), stream));
    init_table(a);
    partition(a);
    a.t2.record(stream);
    reduce(a);
    a.t3.record(stream);
    emit(a);
    a.t4.record(stream);
    const Ctr c = read_ctr(stream);
    if (!c.overflow_n) {
      a.groups = c.out_n;
      break;
    }
    if (a.exact) throw Error("hash group-by: internal error, an exact dense region overflowed");
    a.first_s = a.t4.seconds_since(a.t1);
    a.exact = true;
    dense::exact_regions_kernel<<<1, dense::kThreads, 0, stream>>>(a.regions, a.plan.partitions);
    TANDEM_CUDA_LAUNCH("dense group-by: exact regions");
    a.t1.record(stream);
  }
  report(a, st, rep);
  return gpu::DeviceResult<K, Acc>{a.out_keys, a.out_accs, a.groups};
}

// Min and max of keys[i * step], i < n, through pinned memory.
template <class K, class V>
std::pair<K, K> DenseEngine<K, V>::min_max(const K* keys, std::uint64_t n, std::uint64_t step, cudaStream_t stream) {
  K* mm = ws_.dense_minmax.get<K>(2);
  TANDEM_CUDA(cudaMemsetAsync(mm, 0xff, sizeof(K), stream));
  TANDEM_CUDA(cudaMemsetAsync(mm + 1, 0, sizeof(K), stream));
  const unsigned blocks = gpu::grid_for(n, dense::kThreads, std::uint64_t(dev_.sms) * 4);
  dense::min_max_kernel<K><<<blocks, dense::kThreads, 0, stream>>>(keys, n, step, mm);
  TANDEM_CUDA_LAUNCH("dense group-by: min/max");
  if (!ws_.keys_host.data()) ws_.keys_host = gpu::PinnedBuffer<std::uint64_t>(tuning::kTwoChoiceMax);
  K* host = reinterpret_cast<K*>(ws_.keys_host.data());
  TANDEM_CUDA(cudaMemcpyAsync(host, mm, 2 * sizeof(K), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return {host[0], host[1]};
}

// The global table, the partition buffer and the regions (speculative: even shares), and the
// launch shapes at the occupancy the kernels reach.
template <class K, class V>
void DenseEngine<K, V>::buffers(Pass& a) {
  const dense::Plan& p = a.plan;
  const std::uint32_t P = p.partitions;
  a.table = ws_.dense_table.get<Acc>(p.range);
  a.out_keys = ws_.out_keys[ws_.current].get<K>(p.range);
  a.out_accs = ws_.out_accs[ws_.current].get<Acc>(p.range);
  const std::size_t rsm = std::size_t(p.slots) * sizeof(typename T::SAcc);
  const auto rk = P ? dense::reduce_kernel<K, V, false> : dense::reduce_kernel<K, V, true>;
  gpu::allow_dynamic_shared(reinterpret_cast<const void*>(rk), rsm);
  int per_sm = 1;
  TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rk, dense::kThreads, rsm));
  a.chunk = dense::reduce_chunk(a.M, dev_.sms * std::max(per_sm, 1), p.slots);
  a.reduce_blocks = dense::reduce_blocks(a.M, a.chunk, P);
  if (!P) return;
  const std::uint64_t records = std::uint64_t(P) * p.region;
  a.low = ws_.dense_low.get<std::uint16_t>(records);
  if constexpr (!T::kCount) a.vals = ws_.dense_vals.get<VIn>(records);
  // start[P], cap[P], cursor[P] (8 bytes each), then first_block[P + 1]
  auto* r = ws_.dense_regions.get<std::uint64_t>(3 * std::size_t(P) + (P + 2) / 2);
  a.regions = dense::Regions{r, r + P, reinterpret_cast<unsigned long long*>(r + 2 * P),
                             reinterpret_cast<std::uint32_t*>(r + 3 * P)};
  dense::even_regions_kernel<<<gpu::grid_for(P, 256, 64), 256, 0, a.stream>>>(a.regions, P, p.region);
  TANDEM_CUDA_LAUNCH("dense group-by: regions");
  const std::size_t psm = dense::partition_shared_bytes<K, V>();
  const auto pk = dense::partition_kernel<K, V>;
  gpu::allow_dynamic_shared(reinterpret_cast<const void*>(pk), psm);
  TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pk, dense::kThreads, psm));
  const std::uint64_t tile = std::uint64_t(dense::partition_items<V>()) * dense::kThreads;
  a.partition_blocks = gpu::grid_for(a.M, tile, std::uint64_t(dev_.sms) * std::max(per_sm, 1));
}

template <class K, class V>
void DenseEngine<K, V>::init_table(const Pass& a) {
  if constexpr (T::kCount) {
    TANDEM_CUDA(cudaMemsetAsync(a.table, 0, a.plan.range * sizeof(Acc), a.stream));
  } else {
    dense::fill_kernel<Acc><<<gpu::grid_for(a.plan.range, 256, tuning::kGridCap), 256, 0, a.stream>>>(
        a.table, a.plan.range, T::identity());
    TANDEM_CUDA_LAUNCH("dense group-by: table");
  }
}

template <class K, class V>
void DenseEngine<K, V>::partition(Pass& a) {
  const std::uint32_t P = a.plan.partitions;
  if (!P) return;
  const dense::PartitionArgs<K, V> args{a.keys, a.values, a.M, a.min, a.plan.shift, P, a.regions, a.low, a.vals, ctr_};
  dense::partition_kernel<K, V>
      <<<a.partition_blocks, dense::kThreads, dense::partition_shared_bytes<K, V>(), a.stream>>>(args);
  TANDEM_CUDA_LAUNCH("dense group-by: partition pass");
  dense::chunk_blocks_kernel<<<1, dense::kThreads, 0, a.stream>>>(a.regions, P, a.chunk);
  TANDEM_CUDA_LAUNCH("dense group-by: reduce blocks");
}

template <class K, class V>
void DenseEngine<K, V>::reduce(Pass& a) {
  const dense::Plan& p = a.plan;
  const dense::ReduceArgs<K, V> args{a.keys,    a.values,     a.M,     a.min,   a.low,  a.vals,
                                     a.regions, p.partitions, p.shift, a.chunk, a.table};
  const std::size_t rsm = std::size_t(p.slots) * sizeof(typename T::SAcc);
  const unsigned blocks = static_cast<unsigned>(a.reduce_blocks);
  if (p.partitions) dense::reduce_kernel<K, V, false><<<blocks, dense::kThreads, rsm, a.stream>>>(args);
  else dense::reduce_kernel<K, V, true><<<blocks, dense::kThreads, rsm, a.stream>>>(args);
  TANDEM_CUDA_LAUNCH("dense group-by: reduce");
}

// The occupied slots in order (CUB select over the slot numbers), then keys and aggregates.
template <class K, class V>
void DenseEngine<K, V>::emit(Pass& a) {
  const std::uint64_t R = a.plan.range;
  std::uint32_t* idx = ws_.dense_index.get<std::uint32_t>(R);
  const thrust::counting_iterator<std::uint32_t> slots(0);
  const dense::Occupied<Acc> occupied{a.table};
  std::size_t temp = 0;
  TANDEM_CUDA(
      cub::DeviceSelect::If(nullptr, temp, slots, idx, &ctr_->out_n, static_cast<std::int64_t>(R), occupied, a.stream));
  void* tmp = ws_.temp.get<unsigned char>(temp);
  TANDEM_CUDA(
      cub::DeviceSelect::If(tmp, temp, slots, idx, &ctr_->out_n, static_cast<std::int64_t>(R), occupied, a.stream));
  dense::gather_kernel<K, Acc><<<gpu::grid_for(R, 256, tuning::kGridCap), 256, 0, a.stream>>>(
      a.table, idx, &ctr_->out_n, a.min, a.out_keys, a.out_accs);
  TANDEM_CUDA_LAUNCH("dense group-by: emit");
}

template <class K, class V>
Ctr DenseEngine<K, V>::read_ctr(cudaStream_t stream) {
  if (!ws_.ctr_host.data()) ws_.ctr_host = gpu::PinnedBuffer<Ctr>(1);
  TANDEM_CUDA(cudaMemcpyAsync(ws_.ctr_host.data(), ctr_, sizeof(Ctr), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return ws_.ctr_host[0];
}

template <class K, class V>
void DenseEngine<K, V>::report(const Pass& a, EngineStats& st, Report& rep) {
  const dense::Plan& p = a.plan;
  st = EngineStats{};
  st.engine = "hash";
  st.dense = true;
  st.key_range = p.range;
  st.records = a.M;
  st.distinct = a.groups;
  st.blocks = static_cast<int>(a.reduce_blocks);
  st.block_threads = dense::kThreads;
  st.shared_entries = p.slots;
  st.hot_path = false;
  st.block_tables = false;
  st.partitions = p.partitions;
  st.partitioned = p.partitions ? a.M : 0;
  st.retries = a.exact ? 1 : 0;
  st.partition_note = p.partitions ? gpu::format("{} partitions of {} slots, regions of {} records{}", p.partitions,
                                                 p.slots, p.region, a.exact ? " (then exact)" : "")
                                   : gpu::format("none: the range fits one block's {} slots", p.slots);
  rep.add("GPU dense range (min/max)", "gpu0", a.t1.seconds_since(a.t0) - a.first_s,
          gpu::format("{} records, keys {}..{} (range {})", a.M, a.min, a.max, p.range));
  if (p.partitions)
    rep.add("GPU dense partition pass", "gpu0", a.t2.seconds_since(a.t1),
            gpu::format("{} partitions of {} slots, {} blocks", p.partitions, p.slots, a.partition_blocks));
  rep.add("GPU dense reduce", "gpu0", a.t3.seconds_since(a.t2),
          gpu::format("{} blocks x {} records into {} shared slots", a.reduce_blocks, a.chunk, p.slots));
  rep.add("GPU dense emit", "gpu0", a.t4.seconds_since(a.t3), gpu::format("{} groups in key order", a.groups));
  if (a.exact)
    rep.note(
        gpu::format("dense group-by: keys spread unevenly over the range overflowed a partition region; "
                    "partitioned again into regions of the exact sizes ({} s lost)",
                    a.first_s));
}

template class DenseEngine<std::uint32_t, void>;
template class DenseEngine<std::uint32_t, double>;
template class DenseEngine<std::uint32_t, std::int64_t>;
template class DenseEngine<std::uint64_t, void>;
template class DenseEngine<std::uint64_t, double>;
template class DenseEngine<std::uint64_t, std::int64_t>;

}  // namespace tandem::hash_groupby
