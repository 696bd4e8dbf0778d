// Who owns the hash group-by's state (cuCollections' model: an owning object, and cheap device
// views passed to the kernels). Include from .cu files.
//
// Workspace: the device scratch and pinned host buffers of one group-by at a time. They grow and
// stay allocated between calls (cudaMalloc of large buffers costs more than a whole small job);
// a result left on the device lives in them until the workspace's next run.
// DeviceContext: one device's properties, read once, and its idle workspaces (each caller borrows
// one, so two host threads never share a workspace); the hash group-by's part of that device's
// context (core/device_context.hpp). Kernels' shared-memory limits: gpu::allow_dynamic_shared.
// Context: those parts of a set of device contexts, each made on first use: the library's
// (library_context()) or a set of its own. Safe to share between host threads.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/device_context.hpp"
#include "core/device_pool.hpp"
#include "groupby/hash/plan.hpp"
#include "groupby/hash/types.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/device_scratch.hpp"

namespace tandem::hash_groupby {

struct Workspace {
  using Scratch = gpu::Scratch;
  gpu::PinnedBuffer<Ctr> ctr_host;
  gpu::PinnedBuffer<std::uint32_t> hist_host;
  // The sample's first keys and the host-built two-choice table (u32 or u64 keys in u64 words).
  gpu::PinnedBuffer<std::uint64_t> keys_host, two_choice_host;
  std::vector<std::uint32_t> two_choice32;
  std::vector<std::uint64_t> two_choice64;
  Scratch ctr, hist, top_keys, top_n, sentinel, sample_slots, sample_keys, sample_accs, sample_counts, hot_keys, temp,
      overflow_keys, overflow_accs, two_choice_keys, part_keys, part_cursor;
  Scratch table[2], out_keys[2], out_accs[2];  // a grow moves the result to the other one
  // The dense-range path (dense_engine.hpp): min/max, global accumulators, partition buffer
  // (low bits, values), regions, the emitted slots.
  Scratch dense_minmax, dense_table, dense_low, dense_vals, dense_regions, dense_index;
  int current{0};

  template <class K>
  std::vector<K>& two_choice_table() {
    if constexpr (sizeof(K) == 4) return two_choice32;
    else return two_choice64;
  }
};

class DeviceContext {
 public:
  using Lease = ::tandem::detail::DevicePool<Workspace>::Lease;
  explicit DeviceContext(int device);  // reads the device's properties
  const DeviceProps& props() const { return props_; }
  Lease borrow() { return pool_.borrow(props_.id); }
  std::size_t idle_workspaces() const { return pool_.idle(props_.id); }

 private:
  DeviceProps props_;
  ::tandem::detail::DevicePool<Workspace> pool_;
};

class Context {
 public:
  Context();  // over device contexts of its own (tests, benchmarks)
  explicit Context(::tandem::detail::DeviceContexts& devices) : devices_(&devices) {}
  DeviceContext& device(int id);
  DeviceContext& current();  // of the calling thread's current device

 private:
  std::unique_ptr<::tandem::detail::DeviceContexts> own_;
  ::tandem::detail::DeviceContexts* devices_;
};

// The context of the library's group-by calls (the table group-by's hash engine, entry.hpp):
// over the library's device contexts, where the other engines keep theirs.
Context library_context();

}  // namespace tandem::hash_groupby
