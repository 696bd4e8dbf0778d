// DeviceLists::Impl (the lists and the buffers queries reuse) and the helpers every GPU top-k algorithm shares.
//
// Top-k on the GPU: NRA (phase 1 / phase 2 in batches of STRIDE levels), TA and the full
// scan. Design (see docs/topk.md): per-object state lives in a dense array indexed by id
// (partial aggregate + bitmap of lists seen), so a round is one pass over its batch with atomics;
// fully known objects that beat the current k-th enter a running top k (the paper's tmp) through a
// small radix sort; phase 2 prunes the candidate list by upper bound. Per round the host reads back
// one small status struct (counts and the batch's last scores) and decides. TA and the scan read
// the lists by id: each list's scores in id order, built once per upload. The scan adds every
// object's scores in float (an array that stays in L2), selects, and scores exactly only the
// objects the float's error bound cannot rule out.
//
// Definitions: lists.cu; the algorithms: ta.cu, scan.cu, nra.cu (with the kernels of nra_kernels.cuh and
// nra_one_launch.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/stream.hpp"
#include "topk/gpu/device.cuh"
#include "topk/gpu/nra_one_launch.hpp"
#include "topk/internal.hpp"

namespace tandem::topk {

struct DeviceLists::Impl {
  std::uint32_t n{0};
  std::uint64_t m{0};
  Memory memory{Memory::device};
  gpu::DeviceBuffer<Entry> dev_entries;
  Entry* managed{nullptr};
  const Entry* L{nullptr};
  gpu::Stream stream;

  std::vector<float> max_abs;  // each list's largest |score| (the scale of exact sums)
  Estimate overlap;            // auto's estimate, from the host copy at upload
  gpu::DeviceBuffer<detail::Slot> slots;
  bool slots_clean{false};
  detail::Acc slots_ident{0, 0};
  gpu::DeviceBuffer<std::uint32_t> touched, cand_a, cand_b, completed;
  gpu::DeviceBuffer<detail::Key96> merge_a, merge_b;
  gpu::DeviceBuffer<unsigned char> cub_temp;
  gpu::DeviceBuffer<double> acc;
  gpu::DeviceBuffer<float> approx;  // the scan's float aggregates
  gpu::DeviceBuffer<std::uint32_t> cand_ids;
  gpu::DeviceBuffer<float> by_id;              // score_index(): each list's scores by object id, built once
  gpu::DeviceBuffer<std::uint32_t> nra_words;  // the float NRA's state per object (packed_add)
  gpu::DeviceBuffer<std::uint32_t> cand_bits;  // the float NRA's candidates, a bit per object
  bool by_id_built{false};
  gpu::DeviceBuffer<detail::DevState> state;
  gpu::DeviceBuffer<unsigned long long> hist;
  gpu::PinnedBuffer<detail::DevState> host_state{1};
  gpu::PinnedBuffer<detail::Key96> host_key{1};
  gpu::DeviceBuffer<detail::SelectState> select;
  gpu::PinnedBuffer<detail::SelectState> host_select{1};
  // The one-launch NRA: each list's leading run of top scores (from the host copy at upload), its
  // grid (one block per SM; 0 when no cooperative launch) and the largest table range a block
  // holds in shared memory, the table when it does not fit there, the inboxes and their counts,
  // per-block numbers, two sets of flags (each launch zeroes the other's) and the pinned status +
  // answer it writes.
  std::vector<std::uint64_t> top_run;
  int shallow_blocks{-1};
  std::size_t shallow_shared{0};   // bytes of dynamic shared memory a block may take
  std::size_t shallow_allowed{0};  // what the kernel was allowed so far
  gpu::DeviceBuffer<std::uint32_t> shallow_table;
  gpu::DeviceBuffer<uint4> shallow_inbox;
  gpu::DeviceBuffer<unsigned> shallow_sent;
  gpu::DeviceBuffer<detail::Key96> shallow_comp, shallow_min;
  gpu::DeviceBuffer<unsigned> shallow_numbers;
  gpu::DeviceBuffer<detail::ShallowFlags> shallow_flags;
  int shallow_parity{0};
  bool shallow_dirty{true};  // the counts or the flags may not be zero (new buffers, a failed launch)
  gpu::PinnedBuffer<detail::Key96> host_shallow;
  detail::Key96* host_shallow_dev{nullptr};  // host_shallow as the device sees it

  ~Impl();

  // Slots at {identity, 0} for this aggregate kind.
  void prepare_slots(detail::Acc ident);
  // Slots of the `count` objects in `touched` back at the identity.
  void reset_touched(std::uint64_t count);
  // Sorts `items` 96-bit keys by the device radix sort.
  void sort_keys(const detail::Key96* in, detail::Key96* out, std::uint64_t items);
  // Blocks of the one-launch NRA: one per SM (with the shared memory it may take); 0 when the
  // device cannot launch it.
  int shallow_grid();
  // The status struct into host_state (a stream synchronisation).
  void fetch_state();
};

}  // namespace tandem::topk

namespace tandem::topk::detail {

template <class T>
void ensure(gpu::DeviceBuffer<T>& b, std::size_t n) {
  if (b.size() < n) {
    b = gpu::DeviceBuffer<T>();
    b = gpu::DeviceBuffer<T>(n);
  }
}

// "gpu<N>", the current device, for the report.
std::string where_gpu();

// What every GPU query starts from: the lists, the checked k, the aggregate and an empty result.
struct Query {
  DeviceLists::Impl& d;
  const std::uint32_t n;
  const std::uint64_t m;
  const AggSpec a;
  const std::string where;
  Result r;
};

// The checked k (UsageError outside [1, m]), the aggregate and an empty result.
Query start_query(DeviceLists& dl, std::uint64_t k, const Aggregate& agg);

// Buffers of the round-based paths (NRA, TA) for k, and the status cleared.
void prepare_common(DeviceLists::Impl& d, std::uint64_t k);

// The first `count` sorted keys on the device as (id, score) items.
std::vector<Item> download_items(DeviceLists::Impl& d, const Key96* keys, std::uint64_t count);

// Sorts `count` keys (merge_a -> merge_b) and returns the first k as items.
std::vector<Item> best_keys(DeviceLists::Impl& d, std::uint64_t count, std::uint64_t k);

// Each list's scores by object id (n x m floats), built on the first query that needs it (TA, the
// scan) and kept with the lists.
const float* score_index(Query& q);

// Radix select over m scores (double or float) on the device, kDigitBits at a time down to the
// last key bit: the state (d.select) ends on the k-th best key. Returns the passes run.
template <class T>
int radix_select(DeviceLists::Impl& d, const T* vals, std::uint64_t m, std::uint64_t k);

// The select's state on the host (one round trip; the stream's work so far is done after it).
SelectState read_select(DeviceLists::Impl& d);

// The running top k on the device (merge_a[0, top)), fed by entrants written right after it.
struct TopK {
  DeviceLists::Impl& d;
  std::uint64_t k;
  std::uint64_t top{0};
  Key96 kth{};
  bool full{false};

  // After a round: sorts top + entrants, keeps k, publishes the k-th to the device and the host.
  void merge(std::uint64_t entrants);
  std::vector<Item> items() { return download_items(d, d.merge_a.data(), top); }
};

}  // namespace tandem::topk::detail
