// The GPU row order of key columns: a first look per key (smallest and largest ordered value,
// missing rows), the plan of gpu_key_plan.hpp, then per pass one kernel that encodes each row's
// key in the current row order and one stable CUB radix sort of (key, row) pairs.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "sort/table/gpu_key_plan.hpp"
#include "sort/table/gpu_row_order.hpp"
#include "tandem/cuda/cub_call.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/sequence.hpp"

namespace tandem::detail {
namespace {

using u64 = unsigned long long;  // the type CUDA's 64-bit atomics take
constexpr unsigned kBlock = 256;
constexpr unsigned kMaxBlocks = 4096;

unsigned blocks(std::size_t items) { return gpu::grid_for(items, kBlock, kMaxBlocks); }

// Row r's ordered value bits; false when it is missing.
template <class T>
__device__ bool present_value(const T* v, const std::uint8_t* valid, std::size_t r, bool nan_missing,
                              std::uint64_t& ordered) {
  if (valid != nullptr && !((valid[r >> 3] >> (r & 7)) & 1u)) return false;
  return ordered_key_value(v[r], nan_missing, ordered);
}

// facts[0] = min, facts[1] = max of the present rows' ordered bits, facts[2] = missing rows.
template <class T>
__global__ void key_facts(const T* v, const std::uint8_t* valid, std::size_t rows, bool nan_missing, u64* facts) {
  u64 lo = ~u64{0}, hi = 0, missing = 0;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < rows; i += stride) {
    std::uint64_t o;
    if (present_value(v, valid, i, nan_missing, o)) {
      lo = o < lo ? o : lo;
      hi = o > hi ? o : hi;
    } else {
      ++missing;
    }
  }
  for (int d = 16; d > 0; d /= 2) {
    const u64 l = __shfl_xor_sync(0xffffffffu, lo, d), h = __shfl_xor_sync(0xffffffffu, hi, d);
    lo = l < lo ? l : lo;
    hi = h > hi ? h : hi;
    missing += __shfl_xor_sync(0xffffffffu, missing, d);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMin(facts, lo);
    atomicMax(facts + 1, hi);
    if (missing) atomicAdd(facts + 2, missing);
  }
}

struct PassArgs {
  bool nulls_only, null_bit, descending, nulls_first, nan_missing;
  int value_bits;
  std::uint64_t min, max;
};

// keys[i] = the pass key of row order[i].
template <class T, class K>
__global__ void encode_pass(const T* v, const std::uint8_t* valid, const std::uint32_t* order, std::size_t rows,
                            PassArgs a, K* keys) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < rows; i += stride) {
    std::uint64_t o = 0;
    const bool missing = !present_value(v, valid, order[i], a.nan_missing, o);
    keys[i] = static_cast<K>(
        gpu_pass_key(a.nulls_only, a.value_bits, a.null_bit, a.descending, a.min, a.max, a.nulls_first, missing, o));
  }
}

// Calls f(T*) with the column's values typed as they are stored (strings: their u32 codes).
template <class F>
void with_type(const DeviceKeyColumn& c, F&& f) {
  switch (c.type) {
    case ColumnType::i32: return f(static_cast<const std::int32_t*>(c.values));
    case ColumnType::i64: return f(static_cast<const std::int64_t*>(c.values));
    case ColumnType::u32:
    case ColumnType::str: return f(static_cast<const std::uint32_t*>(c.values));
    case ColumnType::u64: return f(static_cast<const std::uint64_t*>(c.values));
    case ColumnType::f32: return f(static_cast<const float*>(c.values));
    case ColumnType::f64: return f(static_cast<const double*>(c.values));
  }
}

GpuKeyFacts facts_of(const DeviceKeyColumn& c, std::size_t rows, bool nan_missing, u64* scratch, cudaStream_t stream) {
  const u64 init[3] = {~u64{0}, 0, 0};
  TANDEM_CUDA(cudaMemcpyAsync(scratch, init, sizeof init, cudaMemcpyHostToDevice, stream));
  with_type(c, [&](auto* v) {
    key_facts<<<blocks(rows), kBlock, 0, stream>>>(v, c.validity, rows, nan_missing, scratch);
    TANDEM_CUDA_LAUNCH("key_facts");
  });
  u64 got[3];
  TANDEM_CUDA(cudaMemcpyAsync(got, scratch, sizeof got, cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  GpuKeyFacts f;
  f.descending = c.descending;
  f.missing = got[2];
  f.present = rows - f.missing;
  f.min = f.present ? got[0] : 0;
  f.max = f.present ? got[1] : 0;
  return f;
}

// One pass: keys encoded in the current order, then (key, row) pairs sorted stably.
template <class K>
void run_pass(const DeviceKeyColumn& c, const PassArgs& a, std::size_t rows, cub::DoubleBuffer<std::uint32_t>& order,
              K* key_a, K* key_b, cudaStream_t stream) {
  cub::DoubleBuffer<K> keys(key_a, key_b);
  with_type(c, [&](auto* v) {
    encode_pass<<<blocks(rows), kBlock, 0, stream>>>(v, c.validity, order.Current(), rows, a, keys.Current());
    TANDEM_CUDA_LAUNCH("encode_pass");
  });
  const int end_bit = a.nulls_only ? 1 : a.value_bits + (a.null_bit ? 1 : 0);
  gpu::run_cub("table sort: radix sort of a key", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, keys, order, rows, 0, end_bit, stream);
  });
}

}  // namespace

DeviceRowOrder device_row_order(std::span<const DeviceKeyColumn> keys, std::span<const std::string> names,
                                std::size_t rows, NullOrder nulls, bool nan_missing, cudaStream_t stream) {
  DeviceRowOrder out;
  gpu::DeviceBuffer<std::uint32_t> a(rows), b(rows);
  if (rows > 0) {
    gpu::iota_u32(a.data(), rows, stream);
  }
  cub::DoubleBuffer<std::uint32_t> order(a.data(), b.data());
  std::vector<GpuKeyFacts> facts;
  {
    gpu::DeviceBuffer<u64> scratch(3);
    for (const auto& k : keys) facts.push_back(facts_of(k, rows, nan_missing, scratch.data(), stream));
  }
  const auto passes = plan_gpu_key_passes(facts);
  const bool wide = std::any_of(passes.begin(), passes.end(), [](const GpuKeyPass& p) { return p.wide(); });
  gpu::DeviceBuffer<std::uint64_t> key_a(passes.empty() ? 0 : (wide ? rows : (rows + 1) / 2)),
      key_b(passes.empty() ? 0 : (wide ? rows : (rows + 1) / 2));
  for (const auto& p : passes) {
    const GpuKeyFacts& f = facts[p.key];
    const PassArgs args{p.nulls_only, p.null_bit,   f.descending, nulls == NullOrder::first,
                        nan_missing,  p.value_bits, f.min,        f.max};
    if (p.wide()) {
      run_pass(keys[p.key], args, rows, order, key_a.data(), key_b.data(), stream);
    } else {
      run_pass(keys[p.key], args, rows, order, reinterpret_cast<std::uint32_t*>(key_a.data()),
               reinterpret_cast<std::uint32_t*>(key_b.data()), stream);
    }
    // (fmt's compile-time format check does not pass nvcc here)
    out.passes += (out.passes.empty() ? "" : ", ") + names[p.key] + (p.nulls_only ? " missing" : "") + " " +
                  std::to_string(p.end_bit()) + (p.end_bit() == 1 ? " bit" : " bits");
  }
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  out.rows = order.Current() == a.data() ? std::move(a) : std::move(b);
  if (out.passes.empty()) out.passes = "every key equal in every row: input order";
  return out;
}

}  // namespace tandem::detail
