#include "groupby/gpu/group_ids.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include "groupby/gpu/finish.cuh"
#include "groupby/gpu/kernels.cuh"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/cub_call.hpp"
#include "tandem/cuda/sequence.hpp"

namespace tandem::gpu_groupby {
namespace {

__device__ std::uint64_t lower_bound(const std::uint64_t* a, std::uint64_t n, std::uint64_t x) {
  std::uint64_t lo = 0, hi = n;
  while (lo < hi) {
    const std::uint64_t mid = (lo + hi) / 2;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

struct CodeParams {
  KeyCoding coding;
  std::uint64_t card, lo;
  const std::uint64_t* distinct;
  std::uint64_t distinct_n;
  bool missing;
};

template <class T>
__device__ std::uint64_t code_of(Values<T> in, std::size_t i, const CodeParams& p) {
  if (p.missing && !present(in.valid, i)) return p.card - 1;
  switch (p.coding) {
    case KeyCoding::range: return ordered64(in.v[i]) - p.lo;
    case KeyCoding::ranked: return lower_bound(p.distinct, p.distinct_n, key_bits(in.v[i]));
    default: return static_cast<std::uint64_t>(in.v[i]);
  }
}

// acc[i] = acc[i] · card + code (or the code alone for the first column); Acc is u32 when the
// product of the cardinalities is the (direct) group id, else u64.
template <class T, class Acc>
__global__ void mix_kernel(Values<T> in, std::size_t n, CodeParams p, Acc* acc, bool first) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const auto c = static_cast<Acc>(code_of(in, i, p));
    acc[i] = first ? c : static_cast<Acc>(acc[i] * p.card + c);
  }
}

template <class T>
__global__ void present_key_bits(Values<T> in, std::size_t n, std::uint64_t* bits, std::uint8_t* flags) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    bits[i] = key_bits(in.v[i]);
    flags[i] = present(in.valid, i);
  }
}

__global__ void head_flags(const std::uint64_t* sorted, std::size_t n, std::uint32_t* head) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    head[i] = i == 0 || sorted[i] != sorted[i - 1];
}

// rank[i] is the inclusive count of heads: row rows[i] gets rank[i] - 1, and each head's key is
// that rank's distinct value.
__global__ void scatter_ranks(const std::uint64_t* sorted, const std::uint32_t* rows, const std::uint32_t* rank,
                              std::size_t n, std::uint64_t* out, std::uint64_t* distinct) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::uint32_t r = rank[i] - 1;
    out[rows[i]] = r;
    if (i == 0 || sorted[i] != sorted[i - 1]) distinct[r] = sorted[i];
  }
}

__global__ void narrow_kernel(const std::uint64_t* in, std::size_t n, std::uint32_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<std::uint32_t>(in[i]);
}

__global__ void widen_kernel(const std::uint32_t* in, std::size_t n, std::uint64_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void lookup_kernel(std::uint64_t* cur, std::size_t n, const std::uint64_t* distinct) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    cur[i] = distinct[cur[i]];
}

__global__ void peel_kernel(std::uint64_t* cur, std::size_t n, std::uint64_t card, std::uint32_t* code) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    code[i] = static_cast<std::uint32_t>(cur[i] % card);
    cur[i] /= card;
  }
}

// Replaces acc[0, n) (numbers below 2^bits) by their ranks among the distinct ones; returns
// the distinct numbers, ascending.
gpu::DeviceBuffer<std::uint64_t> rank_in_place(std::uint64_t* acc, std::size_t n, int bits, cudaStream_t s) {
  gpu::DeviceBuffer<std::uint64_t> sorted(n);
  gpu::DeviceBuffer<std::uint32_t> rows(n), rows_sorted(n), rank(n);
  gpu::iota_u32(rows.data(), n, s);
  gpu::run_cub("radix sort of mixed key codes", [&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortPairs(t, b, acc, sorted.data(), rows.data(), rows_sorted.data(), n, 0, bits, s);
  });
  rows = {};
  TANDEM_GROUPBY_LAUNCH(head_flags, n, s, sorted.data(), n, rank.data());
  gpu::run_cub("scan of distinct key heads", [&](void* t, std::size_t& b) {
    return cub::DeviceScan::InclusiveSum(t, b, rank.data(), rank.data(), n, s);
  });
  std::uint32_t distinct_n = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&distinct_n, rank.data() + n - 1, sizeof distinct_n, cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  gpu::DeviceBuffer<std::uint64_t> distinct(distinct_n);
  TANDEM_GROUPBY_LAUNCH(scatter_ranks, n, s, sorted.data(), rows_sorted.data(), rank.data(), n, acc, distinct.data());
  return distinct;
}

// The column's distinct present values' key bits, ascending.
template <class T>
gpu::DeviceBuffer<std::uint64_t> distinct_values(const DeviceColumn& c, std::size_t n, cudaStream_t s) {
  gpu::DeviceBuffer<std::uint64_t> bits(n), picked(n);
  gpu::DeviceBuffer<std::uint8_t> flags(n);
  gpu::DeviceBuffer<std::uint32_t> count(1);
  TANDEM_GROUPBY_LAUNCH(present_key_bits<T>, n, s, values_of<T>(c), n, bits.data(), flags.data());
  gpu::run_cub("selection of present keys", [&](void* t, std::size_t& b) {
    return cub::DeviceSelect::Flagged(t, b, bits.data(), flags.data(), picked.data(), count.data(), n, s);
  });
  std::uint32_t m = 0;
  TANDEM_CUDA(cudaMemcpyAsync(&m, count.data(), sizeof m, cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  gpu::run_cub("radix sort of key values", [&](void* t, std::size_t& b) {
    return cub::DeviceRadixSort::SortKeys(t, b, picked.data(), bits.data(), m, 0, int(sizeof(T) * 8), s);
  });
  gpu::run_cub("unique key values", [&](void* t, std::size_t& b) {
    return cub::DeviceSelect::Unique(t, b, bits.data(), picked.data(), count.data(), m, s);
  });
  TANDEM_CUDA(cudaMemcpyAsync(&m, count.data(), sizeof m, cudaMemcpyDeviceToHost, s));
  TANDEM_CUDA(cudaStreamSynchronize(s));
  gpu::DeviceBuffer<std::uint64_t> out(m);
  if (m)
    TANDEM_CUDA(cudaMemcpyAsync(out.data(), picked.data(), m * sizeof(std::uint64_t), cudaMemcpyDeviceToDevice, s));
  return out;
}

template <class T>
KeyCodes code_column(const DeviceColumn& c, std::size_t n, cudaStream_t s) {
  KeyCodes k;
  k.column = &c;
  k.missing = c.missing > 0;
  std::uint64_t lo = 0, hi = 0;
  if (c.type != ColumnType::str && is_integer(c.type) && c.missing < n) {
    gpu::DeviceBuffer<std::uint64_t> ext(2);
    fill<u64>(reinterpret_cast<u64*>(ext.data()), 1, MinAcc::identity(), s);
    fill<u64>(reinterpret_cast<u64*>(ext.data()) + 1, 1, MaxAcc::identity(), s);
    accumulate<MinAcc, T>(nullptr, values_of<T>(c), n, 1, reinterpret_cast<u64*>(ext.data()), s);
    accumulate<MaxAcc, T>(nullptr, values_of<T>(c), n, 1, reinterpret_cast<u64*>(ext.data()) + 1, s);
    std::uint64_t both[2];
    TANDEM_CUDA(cudaMemcpyAsync(both, ext.data(), sizeof both, cudaMemcpyDeviceToHost, s));
    TANDEM_CUDA(cudaStreamSynchronize(s));
    lo = both[0];
    hi = both[1];
  }
  k.coding = c.type == ColumnType::str ? KeyCoding::dictionary : choose_coding(c.type, lo, hi, n);
  if (k.coding == KeyCoding::dictionary) {
    k.card = c.dictionary->card;
    return k;  // its codes already give missing the last one
  }
  if (k.coding == KeyCoding::range) {
    k.lo = lo;
    k.card = (c.missing < n ? hi - lo + 1 : 0) + k.missing;
  } else {
    k.distinct = distinct_values<T>(c, n, s);
    k.card = k.distinct.size() + k.missing;
  }
  return k;
}

CodeParams params_of(const KeyCodes& k) {
  return {k.coding, k.card, k.lo, k.distinct.data(), k.distinct.size(), k.missing};
}

}  // namespace

std::string KeyCodes::how() const {
  switch (coding) {
    case KeyCoding::range: return "offsets from the minimum (" + std::to_string(card) + " codes)";
    case KeyCoding::ranked: return "ranks among " + std::to_string(distinct.size()) + " distinct values (radix sort)";
    default: return "dictionary codes from the upload (" + std::to_string(card) + " codes)";
  }
}

// Mixes the key columns' codes into acc, as the group id itself when `direct`.
template <class Acc>
void mix(const KeyCodes& k, std::size_t n, Acc* acc, bool first, cudaStream_t s) {
  visit_device(k.column->type, [&](auto v) {
    using T = decltype(v);
    mix_kernel<T, Acc><<<grid_for(n), 256, 0, s>>>(values_of<T>(*k.column), n, params_of(k), acc, first);
    TANDEM_CUDA_LAUNCH("mix_kernel");
  });
}

GroupIds group_ids(const DeviceTable::Impl& t, const std::vector<std::string>& by, cudaStream_t s, Report& report) {
  const std::size_t n = t.rows;
  Stopwatch w;
  GroupIds ids;
  std::uint64_t product = 1;
  bool fits = true;
  for (const auto& name : by) {
    const DeviceColumn& c = t.column(name);
    ids.keys.push_back(visit_device(c.type, [&](auto v) { return code_column<decltype(v)>(c, n, s); }));
    const KeyCodes& k = ids.keys.back();
    report.note("key '" + name + "' on the GPU: " + k.how());
    fits = fits && fits_mixed(product, std::max<std::uint64_t>(k.card, 1));
    if (fits) product *= std::max<std::uint64_t>(k.card, 1);
  }
  ids.gid = gpu::DeviceBuffer<std::uint32_t>(n);
  if (fits && product <= direct_limit(n)) {
    for (std::size_t j = 0; j < by.size(); ++j) mix(ids.keys[j], n, ids.gid.data(), j == 0, s);
    ids.stages.push_back({0, by.size(), {}});
    ids.groups = product;
  } else {
    gpu::DeviceBuffer<std::uint64_t> acc(n);
    std::uint64_t acc_card = 1;
    std::size_t begin = 0;
    for (std::size_t j = 0; j < by.size(); ++j) {
      const KeyCodes& k = ids.keys[j];
      if (j > 0 && !fits_mixed(acc_card, std::max<std::uint64_t>(k.card, 1))) {
        ids.stages.push_back({begin, j, rank_in_place(acc.data(), n, bits_for(acc_card), s)});
        acc_card = std::max<std::uint64_t>(ids.stages.back().distinct.size(), 1);
        begin = j;
      }
      mix(k, n, acc.data(), j == 0, s);
      acc_card *= std::max<std::uint64_t>(k.card, 1);
    }
    MixStage last{begin, by.size(), {}};
    if (acc_card > direct_limit(n)) {
      last.distinct = rank_in_place(acc.data(), n, bits_for(acc_card), s);
      acc_card = last.distinct.size();
    }
    ids.stages.push_back(std::move(last));
    ids.groups = acc_card;
    TANDEM_GROUPBY_LAUNCH(narrow_kernel, n, s, acc.data(), n, ids.gid.data());
  }
  TANDEM_CUDA(cudaStreamSynchronize(s));
  const bool ranked = ids.stages.back().distinct.size() > 0;
  report.add("group ids", "gpu" + std::to_string(t.device), w.seconds(),
             std::to_string(by.size()) + " key column(s), " + std::to_string(ids.groups) + " group ids (" +
                 (ranked ? "ranked" : "direct") + "), " + std::to_string(ids.stages.size() - 1 + (ranked ? 1 : 0)) +
                 " ranking pass(es)");
  return ids;
}

namespace {

// A number key column's values from its codes (an offset from the minimum, or a rank among the
// distinct values); the last code is a missing key's when the column has missing keys.
template <class T>
struct KeyOut {
  const std::uint32_t* codes;
  KeyCoding coding;
  std::uint64_t lo, card;
  const std::uint64_t* distinct;
  bool missing;
  __device__ bool operator()(std::size_t i, T& v) const {
    const std::uint64_t c = codes[i];
    if (missing && c == card - 1) return false;
    const std::uint64_t bits = coding == KeyCoding::range ? lo + c : distinct[c];
    v = from_ordered<T>(static_cast<ordered_bits_t<T>>(bits));
    return true;
  }
};

// A string key column: its codes are the dictionary's.
struct CodeOut {
  const std::uint32_t* codes;
  std::uint64_t card;
  bool missing;
  __device__ bool operator()(std::size_t i, std::uint32_t& v) const {
    v = codes[i];
    return !(missing && v == card - 1);
  }
};

}  // namespace

std::vector<DeviceColumn> key_columns(const GroupIds& ids, const std::uint32_t* groups, std::size_t m, cudaStream_t s) {
  std::vector<gpu::DeviceBuffer<std::uint32_t>> codes(ids.keys.size());
  gpu::DeviceBuffer<std::uint64_t> cur(m);
  if (m) TANDEM_GROUPBY_LAUNCH(widen_kernel, m, s, groups, m, cur.data());
  for (std::size_t st = ids.stages.size(); st-- > 0;) {
    const MixStage& stage = ids.stages[st];
    if (m && stage.distinct.size()) TANDEM_GROUPBY_LAUNCH(lookup_kernel, m, s, cur.data(), m, stage.distinct.data());
    for (std::size_t j = stage.end; j-- > stage.begin;) {
      codes[j] = gpu::DeviceBuffer<std::uint32_t>(m);
      if (m)
        TANDEM_GROUPBY_LAUNCH(peel_kernel, m, s, cur.data(), m, std::max<std::uint64_t>(ids.keys[j].card, 1),
                              codes[j].data());
    }
  }
  std::vector<DeviceColumn> out;
  for (std::size_t j = 0; j < ids.keys.size(); ++j) {
    const KeyCodes& k = ids.keys[j];
    const DeviceColumn& source = *k.column;
    if (k.coding == KeyCoding::dictionary) {
      out.push_back(
          finish<std::uint32_t>(source.name, ColumnType::str, m, CodeOut{codes[j].data(), k.card, k.missing}, s));
      out.back().dictionary = source.dictionary;
    } else {
      out.push_back(visit_numeric(source.type, [&](auto v) {
        using T = decltype(v);
        return finish<T>(source.name, m,
                         KeyOut<T>{codes[j].data(), k.coding, k.lo, k.card, k.distinct.data(), k.missing}, s);
      }));
    }
  }
  return out;
}

}  // namespace tandem::gpu_groupby
