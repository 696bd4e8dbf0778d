// The GPU top-k's device state: upload, buffers and slots, the running top k, the score index, the download.
#include <cub/block/block_load.cuh>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cuda/std/tuple>

#include <algorithm>

#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "topk/gpu/lists.cuh"

namespace tandem::topk {

using namespace detail;

namespace {

struct Key96Decomposer {
  __host__ __device__ ::cuda::std::tuple<std::uint64_t&, std::uint32_t&> operator()(Key96& k) const {
    return {k.hi, k.id};
  }
};

__global__ void k_init_slots(Slot* s, std::uint64_t m, Acc ident) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < m;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    s[i] = Slot{ident, 0ull};
}

__global__ void k_reset_slots(const std::uint32_t* ids, std::uint64_t count, Slot* s, std::uint64_t m, Acc ident) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t id = ids[i];
    if (id < m) s[id] = Slot{ident, 0ull};
  }
}

// Merging a handful of entrants into the running top k: one block sorts up to kSmallSort keys in
// shared memory (one launch) instead of the device radix sort's dozen passes over 96-bit keys.
constexpr int kSmallThreads = 256;
constexpr int kSmallItems = 8;
constexpr std::uint64_t kSmallSort = kSmallThreads * kSmallItems;

struct KeyLess {
  __device__ bool operator()(const Key96& a, const Key96& b) const { return key_less(a, b); }
};

__global__ void __launch_bounds__(kSmallThreads) k_small_sort(const Key96* in, Key96* out, int count) {
  using Sort = cub::BlockMergeSort<Key96, kSmallThreads, kSmallItems>;
  __shared__ typename Sort::TempStorage tmp;
  Key96 items[kSmallItems];
  const Key96 pad{~0ull, 0xffffffffu, 0};
  cub::LoadDirectBlocked(int(threadIdx.x), in, items, count, pad);
  Sort(tmp).Sort(items, KeyLess{}, count, pad);
  cub::StoreDirectBlocked(int(threadIdx.x), out, items, count);
}

__global__ void k_set_kth(const Key96* top, std::uint64_t k, DevState* st) {
  st->kth = top[k - 1];
  st->have_kth = 1;
}

// The lists by id (TA's random access, the scan's dense pass): index[i * m + id] = score of id in list i.
__global__ void k_score_index(const Entry* L, std::uint64_t m, std::uint32_t n, float* ix) {
  const std::uint64_t total = m * n;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < total;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const Entry x = L[q];
    if (x.id < m) ix[(q / m) * m + x.id] = x.score;
  }
}

}  // namespace

DeviceLists::Impl::~Impl() {
  if (managed) cudaFree(managed);
}

// Slots at {identity, 0} for this aggregate kind.
void DeviceLists::Impl::prepare_slots(Acc ident) {
  ensure(slots, m);
  if (!slots_clean || slots_ident.lo != ident.lo || slots_ident.hi != ident.hi) {
    k_init_slots<<<gpu::grid_for(m, kBlock, kGridCap), kBlock, 0, stream>>>(slots.data(), m, ident);
    TANDEM_CUDA_LAUNCH("k_init_slots");
    slots_ident = ident;
  }
  slots_clean = false;  // until the query resets what it touched
}

void DeviceLists::Impl::reset_touched(std::uint64_t count) {
  if (count) {
    k_reset_slots<<<gpu::grid_for(count, kBlock, kGridCap), kBlock, 0, stream>>>(touched.data(), count, slots.data(), m,
                                                                                 slots_ident);
    TANDEM_CUDA_LAUNCH("k_reset_slots");
  }
  slots_clean = true;
}

void DeviceLists::Impl::sort_keys(const Key96* in, Key96* out, std::uint64_t items) {
  std::size_t bytes = 0;
  TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, items, Key96Decomposer{}, 0, 96, stream.get()));
  ensure(cub_temp, bytes);
  TANDEM_CUDA(
      cub::DeviceRadixSort::SortKeys(cub_temp.data(), bytes, in, out, items, Key96Decomposer{}, 0, 96, stream.get()));
}

// Blocks of the one-launch NRA: one per SM (with the shared memory it may take); 0 when the
// device cannot launch it.
int DeviceLists::Impl::shallow_grid() {
  if (shallow_blocks < 0) {
    int dev = 0, coop = 0, sms = 0, optin = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    TANDEM_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    TANDEM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    cudaFuncAttributes fa{};
    TANDEM_CUDA(cudaFuncGetAttributes(&fa, nra_one_launch_kernel()));
    const std::size_t reserve = 1024;  // per block, for the runtime
    shallow_shared = std::size_t(optin) > fa.sharedSizeBytes + reserve ? optin - fa.sharedSizeBytes - reserve : 0;
    int per_sm = 0;
    TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nra_one_launch_kernel(), kShallowThreads, 0));
    shallow_blocks = coop && per_sm > 0 ? std::min(sms, kShallowThreads - 1) : 0;
  }
  return shallow_blocks;
}

void DeviceLists::Impl::fetch_state() {
  TANDEM_CUDA(cudaMemcpyAsync(host_state.data(), state.data(), sizeof(DevState), cudaMemcpyDeviceToHost, stream));
  stream.sync();
}

DeviceLists::DeviceLists(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceLists::~DeviceLists() = default;
std::uint32_t DeviceLists::n() const { return impl_->n; }
std::uint64_t DeviceLists::m() const { return impl_->m; }
Memory DeviceLists::memory() const { return impl_->memory; }
Estimate DeviceLists::overlap() const { return impl_->overlap; }
bool DeviceLists::indexed() const { return impl_->by_id_built; }

std::unique_ptr<DeviceLists> upload(const Lists& l, Memory memory, Report* rep) {
  gpu::require();
  check_shape(l);  // the kernels index n x m entries
  auto impl = std::make_unique<DeviceLists::Impl>();
  impl->n = l.n;
  impl->m = l.m;
  impl->memory = memory;
  impl->max_abs = list_max_abs(l);
  impl->overlap = estimate_overlap(l);
  impl->top_run = list_top_runs(l);
  const std::size_t bytes = l.entries.size() * sizeof(Entry);
  Stopwatch w;
  if (memory == Memory::managed) {
    const auto [free, total] = gpu::memory_info();
    const std::size_t margin = std::size_t{256} << 20;
    if (bytes + margin > free)
      throw OutOfMemoryError(gpu::format("managed memory for the lists: {} needed, {} free on the GPU (plus {} margin)",
                                         human_bytes(bytes), human_bytes(free), human_bytes(margin)));
    if (bytes) {
      void* p = nullptr;
      TANDEM_CUDA(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
      impl->managed = static_cast<Entry*>(p);
      parallel_copy(p, l.entries.data(), bytes);  // the host writes; pages move to the GPU when touched
    }
    impl->L = impl->managed;
  } else {
    impl->dev_entries = gpu::DeviceBuffer<Entry>(l.entries.size());
    if (bytes) copy_to_device(impl->dev_entries.data(), l.entries.data(), bytes, impl->stream);
    impl->L = impl->dev_entries.data();
  }
  impl->state = gpu::DeviceBuffer<DevState>(1);
  impl->hist = gpu::DeviceBuffer<unsigned long long>(kBins);
  impl->select = gpu::DeviceBuffer<SelectState>(1);
  TANDEM_CUDA(cudaMemsetAsync(impl->select.data(), 0, sizeof(SelectState), impl->stream));
  if (rep)
    rep->add(memory == Memory::managed ? "lists into managed memory" : "H2D lists", "cpu->" + where_gpu(), w.seconds(),
             human_bytes(bytes));
  return std::make_unique<DeviceLists>(std::move(impl));
}

}  // namespace tandem::topk

namespace tandem::topk::detail {

std::string where_gpu() {
  int dev = 0;
  cudaGetDevice(&dev);
  return gpu::format("gpu{}", dev);
}

// The first `count` sorted keys on the device as (id, score) items.
std::vector<Item> download_items(DeviceLists::Impl& d, const Key96* keys, std::uint64_t count) {
  std::vector<Key96> h(count);
  if (count) TANDEM_CUDA(cudaMemcpyAsync(h.data(), keys, count * sizeof(Key96), cudaMemcpyDeviceToHost, d.stream));
  d.stream.sync();
  std::vector<Item> items;
  items.reserve(count);
  for (const auto& key : h) items.push_back(Item{key.id, key_score(key.hi)});
  return items;
}

void TopK::merge(std::uint64_t entrants) {
  if (entrants == 0) return;
  const std::uint64_t items = top + entrants;
  if (items <= kSmallSort) {
    k_small_sort<<<1, kSmallThreads, 0, d.stream>>>(d.merge_a.data(), d.merge_b.data(), int(items));
    TANDEM_CUDA_LAUNCH("k_small_sort");
  } else {
    d.sort_keys(d.merge_a.data(), d.merge_b.data(), items);
  }
  std::swap(d.merge_a, d.merge_b);
  top = std::min(k, items);
  if (top == k) {
    k_set_kth<<<1, 1, 0, d.stream>>>(d.merge_a.data(), k, d.state.data());
    TANDEM_CUDA_LAUNCH("k_set_kth");
    TANDEM_CUDA(cudaMemcpyAsync(d.host_key.data(), d.merge_a.data() + (k - 1), sizeof(Key96), cudaMemcpyDeviceToHost,
                                d.stream));
    d.stream.sync();
    kth = d.host_key[0];
    full = true;
  }
}

void prepare_common(DeviceLists::Impl& d, std::uint64_t k) {
  ensure(d.touched, d.m);
  ensure(d.completed, d.m);
  ensure(d.cand_a, d.m);
  ensure(d.cand_b, d.m);
  ensure(d.merge_a, k + d.m);
  ensure(d.merge_b, k + d.m);
  TANDEM_CUDA(cudaMemsetAsync(d.state.data(), 0, sizeof(DevState), d.stream));
}

Query start_query(DeviceLists& dl, std::uint64_t k, const Aggregate& agg) {
  auto& d = detail::DeviceListsAccess::impl(dl);
  if (k < 1 || k > d.m) throw UsageError(gpu::format("k = {} must be between 1 and {}", k, d.m));
  Query q{d, d.n, d.m, spec_of(agg, d.n, d.max_abs), where_gpu(), {}};
  q.r.report.operation = "topk";
  return q;
}

// Each list's scores by object id (n x m floats), built on the first query that needs it (TA, the
// scan) and kept with the lists.
const float* score_index(Query& q) {
  auto& d = q.d;
  if (!d.by_id_built) {
    Stopwatch w;
    ensure(d.by_id, std::size_t(q.n) * q.m);
    k_score_index<<<gpu::grid_for(std::uint64_t(q.n) * q.m, kBlock, kGridCap), kBlock, 0, d.stream>>>(d.L, q.m, q.n,
                                                                                                      d.by_id.data());
    TANDEM_CUDA_LAUNCH("k_score_index");
    d.stream.sync();
    d.by_id_built = true;
    q.r.report.add("index build (score by id in each list; once per upload)", q.where, w.seconds(),
                   human_bytes(std::uint64_t(q.n) * q.m * sizeof(float)));
  }
  return d.by_id.data();
}

// Sorts `count` keys (merge_a -> merge_b) and returns the first k as items.
std::vector<Item> best_keys(DeviceLists::Impl& d, std::uint64_t count, std::uint64_t k) {
  if (count <= kSmallSort) {
    k_small_sort<<<1, kSmallThreads, 0, d.stream>>>(d.merge_a.data(), d.merge_b.data(), int(count));
    TANDEM_CUDA_LAUNCH("k_small_sort");
  } else {
    d.sort_keys(d.merge_a.data(), d.merge_b.data(), count);
  }
  return download_items(d, d.merge_b.data(), k);
}

// ---- the radix select on the device: which bucket of score keys holds the k-th best, a digit a pass with
// no host round trip between passes (the scan and the float NRA use it).

namespace {

// Radix select keys: ascending as the score descends (64-bit for double scores, 32 for floats).
__device__ __forceinline__ std::uint64_t select_key(double s) { return order_key(s); }
__device__ __forceinline__ std::uint32_t select_key(float s) { return order_key32(s); }

// Radix select: histogram of the next `width` key bits among objects in the select's bucket.
template <class T>
__global__ void k_select_hist(const T* acc, std::uint64_t m, const SelectState* st, int width,
                              unsigned long long* hist) {
  constexpr int kKeyBits = 8 * sizeof(T);
  __shared__ unsigned int h[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) h[b] = 0;
  __syncthreads();
  const std::uint64_t prefix = st->prefix;
  const int bits = st->bits;
  const unsigned mask = (1u << width) - 1;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  // Every lane of a warp runs the same number of iterations, so the warp can aggregate its
  // increments (scores cluster in few bins: plain shared atomics would serialise).
  const std::uint64_t first = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  const std::uint64_t warp_first = first - (threadIdx.x & 31);
  for (std::uint64_t base = warp_first; base < m; base += stride) {
    const std::uint64_t id = base + (threadIdx.x & 31);
    int bin = -1;
    if (id < m) {
      const std::uint64_t key = select_key(acc[id]);
      if (bits == 0 || (key >> (kKeyBits - bits)) == prefix)
        bin = int(unsigned(key >> (kKeyBits - bits - width)) & mask);
    }
    if (!__any_sync(0xffffffffu, bin >= 0)) continue;  // later passes: most warps hold no object of the bucket
    const unsigned peers = __match_any_sync(0xffffffffu, bin);
    if (bin >= 0 && (threadIdx.x & 31) == unsigned(__ffs(peers) - 1)) atomicAdd(&h[bin], unsigned(__popc(peers)));
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (h[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(h[b]));
}

// One block picks the bin holding the k-th and narrows the select's bucket to it (no host round trip).
constexpr int kPickThreads = kBins / 2;
__global__ void __launch_bounds__(kPickThreads)
    k_select_pick(const unsigned long long* hist, int width, std::uint64_t k, SelectState* st) {
  using Scan = cub::BlockScan<unsigned long long, kPickThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const SelectState s = *st;
  const int b0 = 2 * int(threadIdx.x), bins = 1 << width;
  const unsigned long long h0 = b0 < bins ? hist[b0] : 0, h1 = b0 + 1 < bins ? hist[b0 + 1] : 0;
  unsigned long long before = 0;
  Scan(tmp).ExclusiveSum(h0 + h1, before);
  __syncthreads();  // every thread has read *st
  const unsigned long long need = k - s.less;
  auto take = [&](int bin, unsigned long long at, unsigned long long count) {
    st->prefix = (s.prefix << width) | unsigned(bin);
    st->less = s.less + at;
    st->eq = count;
    st->bits = s.bits + width;
  };
  if (before < need && before + h0 >= need) take(b0, before, h0);
  else if (before + h0 < need && before + h0 + h1 >= need) take(b0 + 1, before + h0, h1);
  if (threadIdx.x == kPickThreads - 1 && before + h0 + h1 < need) st->lost = 1;
}

}  // namespace

template <class T>
int radix_select(DeviceLists::Impl& d, const T* vals, std::uint64_t m, std::uint64_t k) {
  constexpr int kKeyBits = 8 * sizeof(T);
  TANDEM_CUDA(cudaMemsetAsync(d.select.data(), 0, sizeof(SelectState), d.stream));
  int passes = 0;
  for (int bits = 0, width = 0; bits < kKeyBits; bits += width, ++passes) {
    width = std::min(kDigitBits, kKeyBits - bits);
    TANDEM_CUDA(cudaMemsetAsync(d.hist.data(), 0, kBins * sizeof(unsigned long long), d.stream));
    k_select_hist<T>
        <<<gpu::grid_for(m, kBlock, 132 * 8), kBlock, 0, d.stream>>>(vals, m, d.select.data(), width, d.hist.data());
    TANDEM_CUDA_LAUNCH("k_select_hist");
    k_select_pick<<<1, kPickThreads, 0, d.stream>>>(d.hist.data(), width, k, d.select.data());
    TANDEM_CUDA_LAUNCH("k_select_pick");
  }
  return passes;
}

// The select's state on the host (one round trip; the stream's work so far is done after it).
SelectState read_select(DeviceLists::Impl& d) {
  TANDEM_CUDA(
      cudaMemcpyAsync(d.host_select.data(), d.select.data(), sizeof(SelectState), cudaMemcpyDeviceToHost, d.stream));
  d.stream.sync();
  const SelectState st = d.host_select[0];
  if (st.lost) throw Error("top-k scan: radix select lost objects (internal error)");
  return st;
}

template int radix_select<double>(DeviceLists::Impl&, const double*, std::uint64_t, std::uint64_t);
template int radix_select<float>(DeviceLists::Impl&, const float*, std::uint64_t, std::uint64_t);

}  // namespace tandem::topk::detail
