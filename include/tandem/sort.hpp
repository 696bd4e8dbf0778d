// tandem::sort: the fastest correct sort of the caller's data, wherever it lives.
//
// Keys: u32, i32, u64, i64, f32, f64 (floats in the total order of key_order.hpp); optional
// values u32 or u64 carried with their keys. `algorithm = auto_` picks from measured costs:
// device radix sort (CUB) with staged, overlapped copies for host data that fits on the GPU,
// a parallel host MSD partition into GPU-sized pieces (no merge) for data larger than the GPU,
// a parallel CPU sort without a GPU, and the hybrid CPU+GPU bitonic sort when asked
// for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"

namespace tandem {

enum class SortAlgorithm { auto_, bitonic, radix, merge };
SortAlgorithm parse_sort_algorithm(std::string_view name);  // throws UsageError
std::string_view to_string(SortAlgorithm a);

// How much memory the CPU sort may use beside the data. fast: the out-of-place radix (or merge)
// sort, a scratch copy of the data (2x the data at the peak); low: a scratch of at most 1/16 of
// the data (keys and values), so at most ~1.07x at the peak: keys sorted in place by a parallel
// MSD radix sort, pairs stably by radix-sorted blocks merged in place; auto: fast, unless its
// scratch would not fit in the memory available, then low.
enum class SortMemory { auto_, fast, low };
SortMemory parse_sort_memory(std::string_view name);  // "auto", "fast", "low"; throws UsageError
std::string_view to_string(SortMemory m);

// What only the hybrid bitonic sort reads (algorithm = bitonic or device = hybrid).
// What the GPU launch shape (threads per block, elements per thread) is tuned by: wall time, or
// hardware counters (ALU utilisation over shared-memory bank-conflict cost, read through CUPTI;
// time where the driver does not let counters be read).
enum class TuneSignal { time, counters };
TuneSignal parse_tune_signal(std::string_view name);  // "time", "counters"; throws UsageError
std::string_view to_string(TuneSignal s);

struct BitonicOptions {
  char policy{'c'};                          // CPU share policy 'a', 'b' or 'c'
  int min_interior_run{-1};                  // -1: the cost model decides gather vs concurrent
  double k{-1};                              // CPU/GPU capability ratio; < 0: measured and cached
  int gpu_sm_limit{0};                       // launch on at most this many SMs (0: all)
  TuneSignal tune_signal{TuneSignal::time};  // GPU launch shape: tuned by time or by counters
  // The GPUs (CUDA device indices) beside the CPU: several entries sort a share of the plan each,
  // concurrently (repeats allowed: {0, 0} is two shares on GPU 0); empty: GPU 0.
  std::vector<int> gpus;
};

// Thresholds of the GPU paths, for tests and benchmarks that reach a path at sizes it would not
// take by default; 0 keeps the library's default.
struct GpuSortTuning {
  std::size_t split_min_elements{0};       // inputs below this are sorted whole, not MSD split (2^22)
  std::size_t pipeline_chunk_bytes{0};     // the pipeline's upload chunk (the calibrated staging chunk)
  std::size_t msd_keys32_min_elements{0};  // 32-bit keys below this take CUB's sort, not the MSD one (2^26)
};

struct SortOptions {
  SortAlgorithm algorithm{SortAlgorithm::auto_};
  Device device{Device::auto_};
  bool descending{false};
  std::uint64_t gpu_memory_limit{0};     // bytes of GPU memory the sort may use; 0: what is free
  int threads{0};                        // CPU threads; 0: default_threads()
  SortMemory memory{SortMemory::auto_};  // CPU paths: out-of-place scratch or in place (above)
  BitonicOptions bitonic;
  // Called with a status line now and then during long (out-of-core) sorts, and with an empty
  // line when the sort is done. The library prints nothing itself.
  std::function<void(std::string_view)> progress;
  // Device-resident sorts of 32-bit keys without values (u32, i32, f32), 2^26 keys or more, take
  // an MSD radix sort that waits on the host for the keys' prefix counts (microseconds once the
  // stream reaches the sort) and is ~1.4x faster than CUB's. false keeps every device sort free of
  // host waits; a stream being captured into a graph never waits.
  bool device_host_wait{true};
  GpuSortTuning gpu_tuning;
};

// Sorts keys in place. The Report says which path ran, why, and the time of each stage.
template <class K>
Report sort(std::span<K> keys, const SortOptions& opts = {});

// Sorts keys in place and applies the same permutation to values (values.size() == keys.size(),
// else UsageError). Equal keys keep their input order (stable) on every path.
template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts = {});

// A sorted copy: out (in.size() keys, not overlapping in) receives the keys of in sorted, and in
// is only read (a read-only mapping of a file, say). The CPU radix sort's first pass and the GPU
// pipeline's upload read `in` themselves, so the copy costs no pass of its own; the other paths
// copy it into out and sort there. Same paths, options and Report as sort.
template <class K>
Report sort_copy(std::span<const K> in, std::span<K> out, const SortOptions& opts = {});

// Pairs the same way, stable: keys_out and values_out receive keys_in and values_in sorted by key.
template <class K, class V>
Report sort_pairs_copy(std::span<const K> keys_in, std::span<const V> values_in, std::span<K> keys_out,
                       std::span<V> values_out, const SortOptions& opts = {});

// Array files sorted from file to file (raw little-endian or .npy, by name), holding at most
// memory_limit bytes: an input that fits twice in the limit is sorted whole in memory; a larger
// one in pieces of half the limit, each sorted in memory (tandem::sort / sort_pairs with `opts`)
// and written as a run to a scratch file in a private folder under temp_dir, then the runs merged
// in one pass, each read through a window of memory. Stable. The outputs appear only when both
// are complete; the scratch folder is removed on every path. InputError naming a file that cannot
// be read or whose length does not match; UsageError when the limit is too small to merge the
// runs (the message names the least that does).
struct SortFiles {
  std::string keys, values;          // inputs; values empty: keys only
  std::string keys_out, values_out;  // outputs (values_out with values)
  DType key_type{DType::u32};        // u32, i32, u64, i64, f32, f64
  DType value_type{DType::u32};      // u32 or u64
};
struct FileSortLimits {
  std::size_t memory_limit{0};  // bytes; 0: half of the memory available when the sort starts
  std::string temp_dir;         // where the runs go; empty: $TMPDIR, else /tmp
};
Report sort_files(const SortFiles& files, const SortOptions& opts = {}, const FileSortLimits& limits = {});

// The paths tandem::sort can take for host data, as the Report names them.
enum class SortPath { cpu_radix, cpu_comparison, cpu_in_place, gpu_pipeline, gpu_out_of_core, bitonic };
std::string_view to_string(SortPath p);

}  // namespace tandem

#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

namespace tandem {

// Device-resident data: sorts d_keys[0, n) in place on `stream`, asynchronously (no host
// synchronisation, except the MSD sort's wait for its counts: SortOptions::device_host_wait;
// errors of the launch are thrown, faults surface at the caller's next sync). Radix sort (algorithm
// auto/radix; keys of every type in tandem's key order, descending too: 32-bit keys of 2^26 or
// more by tandem's MSD radix sort when their prefix counts allow, otherwise CUB's) or CUB merge
// sort (algorithm merge). Temporary storage and the alternate buffer are kept
// between calls (one workspace per device, grown when needed; release_sort_workspace() frees it);
// calls on different streams are ordered through an event, never a host sync. Safe to call from
// several host threads at once.
//
// Stream contract (as for CUB): the sort is ordered after the work already queued on `stream`,
// and nothing else. Whatever fills d_keys (d_values) on another stream must be finished or made
// to precede it (cudaStreamSynchronize, or cudaEventRecord + cudaStreamWaitEvent) by the caller,
// and the results may be read on `stream` or after synchronising it. In particular a plain
// cudaMemcpy from pageable host memory can return before its DMA has landed: it runs on the legacy
// default stream, which a stream created with cudaStreamNonBlocking does not wait for. Upload with
// cudaMemcpyAsync(..., stream), or pass stream = nullptr (the legacy default stream), or
// synchronise before the call.
// Which sort ran: none (fewer than 2 keys), CUB's radix or merge sort, or tandem's MSD radix sort.
enum class DeviceSortPath { none, cub_radix, cub_merge, msd_radix };
std::string_view to_string(DeviceSortPath p);  // "none", "cub-radix", "cub-merge", "msd-radix"

template <class K>
DeviceSortPath sort_device(K* d_keys, std::size_t n, const SortOptions& opts = {}, cudaStream_t stream = nullptr);

// A sorted copy on the device: d_out (n keys, not overlapping d_in unless it is d_in) receives the
// keys of d_in sorted and d_in is left as it is. Unsigned ascending keys are read from d_in by the
// sort's first pass (no separate copy); other keys are mapped into d_out in one pass and sorted
// there. Same stream contract as sort_device.
template <class K>
DeviceSortPath sort_device_copy(const K* d_in, K* d_out, std::size_t n, const SortOptions& opts = {},
                                cudaStream_t stream = nullptr);

// Pairs on the device, stable (equal keys keep their input order), ascending or descending.
template <class K, class V>
void sort_pairs_device(K* d_keys, V* d_values, std::size_t n, const SortOptions& opts = {},
                       cudaStream_t stream = nullptr);

// Frees the device workspace kept by sort_device and the host pipeline.
void release_sort_workspace();

}  // namespace tandem
#endif
