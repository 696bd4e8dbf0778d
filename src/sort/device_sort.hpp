// Internal interface between the sort dispatcher (sort.cpp) and the GPU paths (*.cu).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "sort/cpu_radix.hpp"
#include "tandem/core/report.hpp"
#include "tandem/sort.hpp"
#if TANDEM_HAS_CUDA
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/stream.hpp"
#endif

namespace tandem::detail {

// Pure sizing, tested on the CPU. per_elem: bytes of one key plus its value; a one-piece GPU sort
// holds the data twice (CUB's double buffer) plus CUB's temporary storage (~temp_per_elem bytes
// per element, a margin over what CUB asks at 2^20..2^30) and a fixed slack.
constexpr std::size_t kGpuSlackBytes = std::size_t{64} << 20;
constexpr std::size_t gpu_bytes_needed(std::size_t n, std::size_t per_elem) {
  return n * (2 * per_elem + per_elem / 2 + 1) + kGpuSlackBytes;
}
// Elements per chunk when the data does not fit in `budget` bytes of GPU memory (at least 1 Mi
// elements, a multiple of 2^20 so chunks stay aligned for the copy engines).
constexpr std::size_t out_of_core_chunk(std::size_t budget, std::size_t per_elem) {
  const std::size_t unit = std::size_t{1} << 20;
  const std::size_t avail = budget > kGpuSlackBytes ? budget - kGpuSlackBytes : 0;
  std::size_t c = avail / (2 * per_elem + per_elem / 2 + 1);
  c = c / unit * unit;
  return c < unit ? unit : c;
}

#if TANDEM_HAS_CUDA
// Device memory kept between sorts on one device: CUB's temporary storage, the alternate (double)
// buffers, and the host pipeline's copy of the data. `done` marks its last use on any stream, so
// the next user's stream waits for it on the device (no host sync). A part of the device's
// context (core/device_context.hpp), never destroyed; release_sort_workspace() frees the buffers.
struct SortWorkspace {
  gpu::DeviceBuffer<char> temp, alt_keys, alt_values, keys, values;
  gpu::DeviceBuffer<char> scratch;             // the alternate buffer of one group's sort (pre-partitioned split)
  gpu::DeviceBuffer<unsigned long long> hist;  // digit histograms of the upload (8 x 256 per upload batch)
  gpu::PinnedBuffer<unsigned long long> hist_host;
  gpu::DeviceBuffer<char> msd;                     // the 32-bit keys' MSD sort: counts, starts, cursors, scan storage
  gpu::PinnedBuffer<std::uint32_t> msd_host;       // its summary on the host
  std::optional<gpu::Event> msd_counted;           // the summary reached the host
  std::vector<gpu::PinnedBuffer<char>> d2h_slots;  // the pipeline's staged D2H copies
  std::vector<gpu::Event> d2h_done;
  cudaEvent_t done{nullptr};
  bool pending{false};
  std::mutex mu;
  void begin(cudaStream_t s);  // s waits for the previous use
  void end(cudaStream_t s);    // records this use
};
SortWorkspace& sort_workspace();  // of the current device
// Grows b, a buffer of the current device's workspace (the caller holds its mu), to at least
// `bytes` (contents are lost; the workspace's last use finishes first) and returns its data.
char* grow(gpu::DeviceBuffer<char>& b, std::size_t bytes);

// Kernels and CUB calls (device_radix*.cu). Keys are mapped in place to tandem's ordered bits
// (inverted when descending) and back; unsigned ascending keys need no mapping.
template <class K>
constexpr bool needs_mapping(bool descending) {
  return descending || std::is_signed_v<K> || std::is_floating_point_v<K>;
}
template <class K>
void map_to_bits(void* d, std::size_t n, bool descending, cudaStream_t s);
template <class K>
void map_from_bits(void* d, std::size_t n, bool descending, cudaStream_t s);
// map_to_bits from src into dst in one pass (src is left as it is).
template <class K>
void map_to_bits_copy(const void* src, void* dst, std::size_t n, bool descending, cudaStream_t s);
// Ascending, stable sort of unsigned bits (values may be NoValue*/nullptr) with CUB radix sort,
// or CUB merge sort when `merge`; the result ends in k/v. n <= INT32_MAX.
template <class U, class V>
void sort_bits(U* k, V* v, std::size_t n, bool merge, SortWorkspace& ws, cudaStream_t s);
// Ascending radix sort of the n bits at `in` into `out`: `in` is read by the first pass and left
// as it is (CUB keeps its alternate buffer in ws.temp). n <= INT32_MAX.
template <class U>
void sort_bits_copy(const U* in, U* out, std::size_t n, SortWorkspace& ws, cudaStream_t s);

// The MSD sort of 32-bit keys (msd_keys32_plan.hpp): sorts the n keys at `in` into `out` (in ==
// out allowed; ws.alt_keys is its scratch) and returns true, or returns false having written
// nothing when it declines: fewer than min_elements keys (0: kMsdKeys32MinElements), a stream
// being captured into a graph, or prefix counts that a block cannot sort (skewed keys). Waits on
// the host for the counts.
bool msd_sort_keys32(const std::uint32_t* in, std::uint32_t* out, std::size_t n, SortWorkspace& ws, cudaStream_t s,
                     std::size_t min_elements = 0);

// Histograms of every 8-bit digit of n ordered bits, added into hist[sizeof(U) * 256] (digit k,
// least significant first, at hist[k * 256]; not cleared).
template <class U>
void digit_histogram(const U* d, std::size_t n, unsigned long long* hist, cudaStream_t s);
// Up to kMaxGatherSegments device-to-device copies of n[i] elements of U in one launch (a
// cudaMemcpyAsync each costs more host time than the copy on the GPU).
constexpr int kMaxGatherSegments = 8;
template <class U>
struct GatherList {
  const U* src[kMaxGatherSegments];
  U* dst[kMaxGatherSegments];
  std::size_t n[kMaxGatherSegments];
  int count{0};
};
template <class U>
void gather_segments(const GatherList<U>& list, cudaStream_t s);

// CUB radix sort of bits [begin_bit, end_bit) over the double buffers (k, k_alt), (v, v_alt);
// returns true when the result ended in the alternate buffers. radix_temp_bytes: CUB's temporary
// storage for n elements and those bits.
template <class U, class V>
std::size_t radix_temp_bytes(std::size_t n, int begin_bit, int end_bit);
template <class U, class V>
bool sort_bits_range(U* k, U* k_alt, V* v, V* v_alt, std::size_t n, int begin_bit, int end_bit, void* temp,
                     std::size_t temp_bytes, cudaStream_t s);

// GPU memory this process may use for a sort: opts.gpu_memory_limit if set, else 90% of free.
std::size_t gpu_sort_budget(const SortOptions& opts);

// Host data on the GPU: the staged pipeline when it fits in the budget, otherwise a parallel
// host MSD partition into pieces that fit, each sorted by the pipeline in its final place. Throws CudaError /
// OutOfMemoryError / NoDeviceError. With sources (keys_in, values_in not null, not overlapping the
// outputs), keys (values) receive them sorted and the sources are only read: the pipeline uploads
// from them; the out-of-core path copies them first.
template <class K, class V>
void gpu_sort_host(std::span<K> keys, std::span<V> values, const SortOptions& opts, Report& r,
                   const K* keys_in = nullptr, const V* values_in = nullptr);
#endif

}  // namespace tandem::detail

namespace tandem::detail {

// What the dispatcher knows when it picks a path (pure inputs, so the choice is testable).
struct PathInputs {
  std::size_t n{0};
  std::size_t key_bytes{4};
  std::size_t value_bytes{0};
  bool gpu{false};            // a GPU is usable
  bool pinned{false};         // the caller's memory is page-locked
  std::size_t gpu_budget{0};  // bytes of GPU memory the sort may use
  double host_bw{0};          // multi-threaded host memcpy, bytes/s (0: unknown)
  double link_bw{0};          // host<->device each way for this memory, bytes/s (0: unknown)
  int threads{1};
  SortAlgorithm algorithm{SortAlgorithm::auto_};
  Device device{Device::auto_};
  SortMemory memory{SortMemory::auto_};
  std::uint64_t host_available{0};  // bytes of host memory free for the sort's scratch (0: unknown)
};

struct PathChoice {
  SortPath path{SortPath::cpu_radix};
  std::string why;
  double est_cpu_s{0};
  double est_gpu_s{0};
};

PathChoice choose_sort_path(const PathInputs& in);

// Host memory a path allocates beside the data, in bytes (pure; for the memory choice and the
// docs' peak-memory table): the radix sort's scratch copy of keys and values, the comparison
// sort's copy (pairs: packed items plus the merge's buffer), the out-of-core partition's
// destination, the in-place sort's buckets (n / kInPlaceScratchDivisor keys); none for the
// GPU pipeline (pinned staging slots of a few MiB).
std::uint64_t host_scratch_bytes(SortPath path, std::size_t n, std::size_t key_bytes, std::size_t value_bytes);

}  // namespace tandem::detail
