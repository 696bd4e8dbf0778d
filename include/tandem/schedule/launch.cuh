// The reusable schedule launcher: any kernel launched over a 1D grid of band.count() blocks gets
// its logical block from a ScheduleView, so the launch order (blockIdx, or an atomic ticket for
// an exact dispatch order) becomes the schedule's order.
//
//   __global__ void k(tandem::schedule::ScheduleView v, ...) {
//     const tandem::schedule::Block b = v.block();   // logical (x, y) in the full grid
//     ...
//   }
//   tandem::schedule::Launcher L;
//   auto v = L.view(schedule, Grid{w, h}, x0, y0, stream);   // the w x h blocks at (x0, y0)
//   k<<<v.blocks(), threads, 0, stream>>>(v, ...);
//
// CUDA only (include from .cu files).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "tandem/cuda/buffers.hpp"
#include "tandem/schedule.hpp"

namespace tandem::schedule {

struct ScheduleView {
  Schedule schedule;
  Grid band;                      // the grid the schedule orders (w x h blocks)
  std::uint32_t x0{0}, y0{0};     // the band's first block column and row in the full grid
  const uint2* table{nullptr};    // precomputed order (Hilbert on large grids), or null
  unsigned int* ticket{nullptr};  // dispatch counter (zeroed before the launch), or null

  __host__ __device__ unsigned int blocks() const { return unsigned(band.count()); }

#if defined(__CUDACC__)
  // Call from every thread of the block (it synchronises when a ticket is used).
  __device__ Block block() const {
    std::uint64_t p;
    if (ticket) {
      __shared__ unsigned int slot;
      if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) slot = atomicAdd(ticket, 1u);
      __syncthreads();
      p = slot;
    } else {
      p = blockIdx.x;
    }
    Block b;
    if (table) {
      const uint2 t = table[p];
      b = {t.x, t.y};
    } else {
      b = schedule.at(p, band);
    }
    b.x += x0;
    b.y += y0;
    return b;
  }
#endif
};

// Owns what views point to: Hilbert tables per band size and the ticket counter.
class Launcher {
 public:
  // Hilbert positions come from a table when the band has at least this many blocks; 0 disables
  // tables. Default 1 (always): measured on an H200, evaluating the curve in every block made a
  // 512x10-block band of copy-row ~5x slower (103 us against 19 us), while a table costs one
  // cached 8-byte load per block (built once per band size on the host and kept).
  void set_table_threshold(std::uint64_t blocks) { table_threshold_ = blocks; }
  void set_ticket(bool on) { use_ticket_ = on; }

  // Validates s on band (UsageError) and prepares the view; zeroes the ticket on `stream`.
  ScheduleView view(const Schedule& s, Grid band, std::uint32_t x0, std::uint32_t y0, cudaStream_t stream);

 private:
  std::uint64_t table_threshold_{1};
  bool use_ticket_{false};
  std::map<std::pair<std::uint32_t, std::uint32_t>, gpu::DeviceBuffer<uint2>> tables_;
  gpu::DeviceBuffer<unsigned int> ticket_;
};

}  // namespace tandem::schedule
