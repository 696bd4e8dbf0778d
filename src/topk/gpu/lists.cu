// The GPU top-k's device state: upload, buffers and slots, the running top k, the score index, the download.
#include <cub/cub.cuh>
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

}  // namespace tandem::topk::detail
