// Group-by of integer keys in GPU memory: tandem's hash group-by engine (hot keys in shared
// memory, or direct-indexed accumulators for keys of a small range; mapreduce/gpu_jobs.hpp), then
// the groups sorted by key on the device (unless they came in key order) and written to the
// caller's arrays.
#include <cuda_runtime.h>

#include <mutex>
#include <type_traits>

#include <string>

#include "device.hpp"
#include "mapreduce/gpu_jobs.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/sort.hpp"

namespace tandem::python {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::size_t items) {
  return static_cast<unsigned>(
      std::max<std::size_t>(1, std::min<std::size_t>((items + kThreads - 1) / kThreads, 1u << 20)));
}

__global__ void iota_kernel(std::uint32_t* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<std::uint32_t>(i);
}

// Output row i takes the group at position order[i] of the engine's result (at i without an
// order). Integer sums wrap on the device: a group where |value| * count may reach 2^63 raises
// *may_wrap.
template <class Acc>
__global__ void gather_kernel(const Acc* accs, const std::uint32_t* order, std::size_t n, DeviceGroupOutputs out,
                              unsigned* may_wrap) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const Acc a = accs[order ? order[i] : i];
    if constexpr (std::is_same_v<Acc, std::uint64_t>) {
      if (out.count) out.count[i] = static_cast<std::int64_t>(a);
    } else {
      using A = decltype(a.sum);
      if (out.count) out.count[i] = static_cast<std::int64_t>(a.count);
      if (out.sum) static_cast<A*>(out.sum)[i] = a.sum;
      if (out.min) static_cast<A*>(out.min)[i] = a.min;
      if (out.max) static_cast<A*>(out.max)[i] = a.max;
      if (out.mean) out.mean[i] = static_cast<double>(a.sum) / static_cast<double>(a.count);
      if constexpr (std::is_integral_v<A>) {
        const double largest = fmax(fabs(static_cast<double>(a.min)), fabs(static_cast<double>(a.max)));
        if (largest * static_cast<double>(a.count) >= 9.2e18) atomicOr(may_wrap, 1u);
      }
    }
  }
}

// The engine's buffers hold its result until the next call: calls from Python are serialised.
std::mutex engine_mutex;

// S: the key type the groups sort by (signed keys travel through the engine as their bits).
// Sorts the engine's groups by key into the caller's arrays: keys copied, positions sorted with
// them, aggregates gathered by position.
template <class S, class V>
Report run(const DeviceGroupByCall& call) {
  using K = std::make_unsigned_t<S>;
  using Acc = typename mapreduce::GroupByJob<K, V>::value_type;
  Report r;
  r.operation = "groupby";
  std::lock_guard lock(engine_mutex);
  mapreduce::EngineStats st;
  auto write = [&](const K* group_keys, const Acc* accs, std::size_t groups) {
    const DeviceGroupOutputs out = call.allocate(groups);
    if (groups == 0) return;
    S* keys = static_cast<S*>(out.keys);
    TANDEM_CUDA(cudaMemcpyAsync(keys, group_keys, groups * sizeof(K), cudaMemcpyDeviceToDevice, call.stream));
    // The dense-range path's groups come in key order already; its range never spans the sign
    // change of signed keys (that range is 2^31 or more), so that is their signed order too.
    const bool sorted = st.dense;
    const std::size_t positions = sorted ? 0 : groups;
    void* scratch = nullptr;  // the positions and the wrap flag
    TANDEM_CUDA(cudaMallocAsync(&scratch, (positions + 1) * sizeof(std::uint32_t), call.stream));
    auto* order = sorted ? nullptr : static_cast<std::uint32_t*>(scratch);
    if (!sorted) {
      iota_kernel<<<grid_for(groups), kThreads, 0, call.stream>>>(order, groups);
      TANDEM_CUDA_LAUNCH("groupby: number groups");
      sort_pairs_device(keys, order, groups, SortOptions{}, call.stream);
    }
    unsigned* may_wrap = static_cast<unsigned*>(scratch) + positions;
    TANDEM_CUDA(cudaMemsetAsync(may_wrap, 0, sizeof(unsigned), call.stream));
    gather_kernel<<<grid_for(groups), kThreads, 0, call.stream>>>(accs, order, groups, out, may_wrap);
    TANDEM_CUDA_LAUNCH("groupby: gather aggregates");
    unsigned wrapped = 0;
    if constexpr (std::is_integral_v<V>) {
      if (out.sum || out.mean) {  // one more host synchronisation: an int64 sum that may have wrapped is an error
        TANDEM_CUDA(cudaMemcpyAsync(&wrapped, may_wrap, sizeof wrapped, cudaMemcpyDeviceToHost, call.stream));
        TANDEM_CUDA(cudaStreamSynchronize(call.stream));
      }
    }
    TANDEM_CUDA(cudaFreeAsync(scratch, call.stream));
    if (wrapped)
      throw InputError(
          "device group-by: an int64 sum may overflow in some group (|value| x rows reaches 2^63); "
          "sum float64 values, or group on the CPU, which checks every sum");
    r.note(std::to_string(groups) + (sorted ? " groups in key order from the dense-range path into the caller's arrays"
                                            : " groups sorted by key on the device (CUB radix sort) into the "
                                              "caller's arrays"));
  };
  mapreduce::detail::gpu_groupby_hash_on_device<K, V>(static_cast<const K*>(call.keys),
                                                      static_cast<const V*>(call.values), call.n, mapreduce::Options{},
                                                      st, r, call.stream, write);
  mapreduce::explain_stats(r, st);
  return r;
}

template <class S>
Report with_values(const DeviceGroupByCall& call) {
  if (!call.has_values) return run<S, void>(call);
  if (call.value_type == DType::f64) return run<S, double>(call);
  if (call.value_type == DType::i64) return run<S, std::int64_t>(call);
  throw UsageError("device group-by: values of type " + std::string(to_string(call.value_type)) +
                   " (expected f64 or i64)");
}

}  // namespace

Report groupby_device(const DeviceGroupByCall& call) {
  if (call.n >= (std::uint64_t{1} << 32)) throw UsageError("device group-by: 2^32 rows or more");
  switch (call.key_type) {
    case DType::u32: return with_values<std::uint32_t>(call);
    case DType::i32: return with_values<std::int32_t>(call);
    case DType::u64: return with_values<std::uint64_t>(call);
    case DType::i64: return with_values<std::int64_t>(call);
    default: break;
  }
  throw UsageError("device group-by: keys of type " + std::string(to_string(call.key_type)) +
                   " (expected integers: i32, i64, u32 or u64)");
}

}  // namespace tandem::python
