// Whether NRA in one launch runs, and (host side) its buffers' sizes, its launch and its status into a result.
#include <atomic>
#include <cstring>
#include <string>

#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "topk/gpu/lists.cuh"

namespace tandem::topk::detail {
namespace {

// The launch's shape: g blocks, each holding `range` table entries (in shared memory when
// in_shared: table_bytes of it), an inbox of `box` entries each, and the per-block numbers' rows.
struct ShallowShape {
  std::size_t g;
  std::uint64_t range;
  std::size_t table_bytes;
  bool in_shared;
  std::uint64_t box;
  std::size_t row, at;
};

// Sizes every buffer the kernel uses for g blocks, `entries` table entries and a depth budget;
// buffers that are new (or a launch that failed) get their counts and flags zeroed.
ShallowShape prepare_shallow(DeviceLists::Impl& d, int blocks, std::uint32_t n, std::uint64_t entries,
                             std::uint64_t budget) {
  const auto g = std::size_t(blocks);
  const std::uint64_t range = (entries + g - 1) / g;  // each block's part of the table
  const std::size_t table_bytes = range * (1 + n) * sizeof(std::uint32_t);
  const bool in_shared = table_bytes <= d.shallow_shared;
  if (in_shared && table_bytes > d.shallow_allowed) {
    gpu::allow_dynamic_shared(nra_one_launch_kernel(), table_bytes);
    d.shallow_allowed = table_bytes;
  }
  if (!in_shared) ensure(d.shallow_table, g * range * (1 + n));
  // A round sends at most n x budget entries, spread evenly over the blocks by the hash: twice
  // that share, and room for small rounds.
  const std::uint64_t box = 2 * ((std::uint64_t(n) * budget + g - 1) / g) + 1024;
  ensure(d.shallow_inbox, g * box);
  if (d.shallow_sent.size() < g) {
    ensure(d.shallow_sent, g);
    d.shallow_dirty = true;
  }
  if (d.host_shallow.size() < 2 + kShallowRankMax) {
    d.host_shallow = gpu::PinnedBuffer<Key96>();
    d.host_shallow = gpu::PinnedBuffer<Key96>(2 + kShallowRankMax);
    void* dev = nullptr;
    TANDEM_CUDA(cudaHostGetDevicePointer(&dev, d.host_shallow.data(), 0));
    d.host_shallow_dev = static_cast<Key96*>(dev);
  }
  if (d.shallow_flags.size() < 2) {
    d.shallow_flags = gpu::DeviceBuffer<ShallowFlags>(2);
    d.shallow_dirty = true;
  }
  if (d.shallow_dirty) {
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_sent.data(), 0, d.shallow_sent.bytes(), d.stream));
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_flags.data(), 0, d.shallow_flags.bytes(), d.stream));
    d.shallow_parity = 0;
  }
  ensure(d.shallow_comp, g * range);
  ensure(d.shallow_min, g);
  ensure(d.merge_a, g * range);
  ensure(d.merge_b, g * range);
  const std::size_t row = (g + 3) / 4 * 4, at = (5 * g + 3) / 4 * 4;
  if (d.shallow_numbers.size() < at + kShallowSamples * row) {
    ensure(d.shallow_numbers, at + kShallowSamples * row);
    // The rows' padding past the last block stays zero.
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_numbers.data(), 0, d.shallow_numbers.bytes(), d.stream));
  }
  return ShallowShape{g, range, table_bytes, in_shared, box, row, at};
}

// The kernel's arguments over the buffers prepare_shallow sized.
ShallowArgs shallow_args(const Query& q, const ShallowShape& sh, std::uint64_t k, std::uint64_t first,
                         std::uint64_t budget) {
  auto& d = q.d;
  const std::size_t g = sh.g, at = sh.at;
  unsigned* numbers = d.shallow_numbers.data();
  ShallowFlags* flags = d.shallow_flags.data();
  return ShallowArgs{d.L,
                     q.m,
                     q.n,
                     q.a,
                     unit_inverse(q.a.scale),
                     sh.range,
                     sh.in_shared ? nullptr : d.shallow_table.data(),
                     d.shallow_inbox.data(),
                     sh.box,
                     d.shallow_sent.data(),
                     k,
                     first,
                     budget,
                     kShallowFloor,
                     d.shallow_comp.data(),
                     d.merge_b.data(),
                     d.merge_a.data(),
                     d.shallow_min.data(),
                     BlockNumbers{numbers, numbers + g, numbers + 2 * g, numbers + 3 * g, numbers + 4 * g, numbers + at,
                                  unsigned(sh.row)},
                     flags + d.shallow_parity,
                     flags + (1 - d.shallow_parity),
                     d.host_shallow_dev};
}

// Launches the cooperative grid and polls the status it writes into pinned memory (cheaper than a
// copy back and a stream synchronisation).
ShallowStatus launch_shallow(DeviceLists::Impl& d, const ShallowArgs& args, int blocks, const ShallowShape& sh) {
  void* params[] = {const_cast<ShallowArgs*>(&args)};
  d.shallow_dirty = true;  // until the kernel has answered
  auto* status = reinterpret_cast<volatile unsigned*>(d.host_shallow.data());
  TANDEM_CUDA(cudaLaunchCooperativeKernel(nra_one_launch_kernel(), dim3(unsigned(blocks)), dim3(kShallowThreads),
                                          params, sh.in_shared ? sh.table_bytes : 0, d.stream));
  // The status is the kernel's last write; a kernel that ends without one failed.
  for (unsigned spin = 1; *status == 0; ++spin) {
    if (spin % 256) continue;
    const cudaError_t e = cudaStreamQuery(d.stream);
    if (e == cudaErrorNotReady || *status != 0) continue;
    TANDEM_CUDA(e);
    throw Error("top-k NRA in one launch: the kernel ended without a status (internal error)");
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  ShallowStatus st;
  std::memcpy(&st, d.host_shallow.data(), sizeof st);
  d.shallow_parity = 1 - d.shallow_parity;
  d.shallow_dirty = false;
  return st;
}

// The kernel's status into q.r: the answer (from pinned memory, or sorted from merge_a), or a note
// that it gave up.
Shallow shallow_result(Query& q, std::uint64_t k, const ShallowStatus& st, std::uint64_t table, std::uint64_t budget,
                       double seconds) {
  auto& [d, n, m, a, where, r] = q;
  if (st.state == kShallowGaveUp) {
    r.report.add("NRA in one launch (gave up)", where, seconds,
                 gpu::format("{} rounds, {} levels of each list", st.rounds, st.depth));
    r.report.note(st.cap ? gpu::format("nra: NRA in one launch did not stop before its table of {} objects filled "
                                       "up (the stop is deeper); the other NRA paths answer",
                                       table)
                         : gpu::format("nra: NRA in one launch did not stop within its budget of {} levels (the stop "
                                       "is deeper); the other NRA paths answer",
                                       budget));
    return Shallow::gave_up;
  }
  if (st.state == kShallowAnswer) {
    r.items.resize(k);
    const Key96* keys = d.host_shallow.data() + 2;
    for (std::uint64_t i = 0; i < k; ++i) r.items[i] = Item{keys[i].id, key_score(keys[i].hi)};
  } else if (st.state == kShallowHostSort) {
    r.items = best_keys(d, st.complete, k);  // every complete object's key is in merge_a
  } else {
    throw Error(gpu::format("top-k NRA in one launch: state {} (internal error)", st.state));
  }
  return Shallow::answered;
}

}  // namespace

// NRA in one launch (k_nra_shallow): the rounds, the stop test and the top k on the device; the
// host polls the status the kernel writes into pinned memory. not_run when the device has no
// cooperative launch, there are more lists than kShallowMaxLists, the table would be too large, or
// a depth cap (opts.max_depth) lies inside its budget; gave_up (a note in q.r) when NRA does not
// stop within the budget or the table fills up.
Shallow nra_shallow(Query& q, std::uint64_t k, std::uint64_t max_depth) {
  auto& [d, n, m, a, where, r] = q;
  if (n > kShallowMaxLists) return Shallow::not_run;
  const std::uint64_t first = shallow_first_depth(a, d.top_run, m, k, kShallowFloor);
  const std::uint64_t budget = shallow_budget(m, first), entries = table_entries(n, first);
  if ((max_depth && max_depth < budget) || entries > kShallowMaxEntries) return Shallow::not_run;
  const int blocks = d.shallow_grid();
  if (blocks == 0) {
    r.report.note("nra: this GPU cannot launch a cooperative grid; NRA runs in host-driven rounds");
    return Shallow::not_run;
  }
  Stopwatch w;
  const ShallowShape sh = prepare_shallow(d, blocks, n, entries, budget);
  auto* status = reinterpret_cast<volatile unsigned*>(d.host_shallow.data());
  *status = 0;
  const ShallowArgs args = shallow_args(q, sh, k, first, budget);
  const ShallowStatus st = launch_shallow(d, args, blocks, sh);
  r.stats.stride = first;
  if (shallow_result(q, k, st, sh.g * sh.range, budget, w.seconds()) == Shallow::gave_up) return Shallow::gave_up;
  // std::to_string: this path's whole budget is tens of microseconds.
  r.report.add("NRA in one launch: rounds, stop tests and the top k on the device", where, w.seconds(),
               std::to_string(st.rounds) + " rounds, " + std::to_string(st.depth) + " levels of each list; " +
                   std::to_string(st.complete) + " complete objects, " +
                   (st.state == kShallowAnswer ? std::to_string(st.ranked) + " ranked in one block" : "sorted"));
  finish(r, "nra", where, n, m, st.depth, st.complete, std::uint64_t(st.rounds), true, true);
  return Shallow::answered;
}

}  // namespace tandem::topk::detail
