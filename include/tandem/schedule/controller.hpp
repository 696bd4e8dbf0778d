// Choosing a block schedule for a kernel over an n x n problem: statically, from the memory
// footprints of its blocks, or by measurement, with the controller that profiles a minority of the
// blocks under candidate schedules and runs the rest under the winner.
//
// The controller runs in CUDA builds; elsewhere run_controlled throws NoDeviceError. The six
// benchmark kernels the CLI and the benchmarks use: tandem/schedule/kernels.hpp.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/schedule.hpp"

namespace tandem {
class TuningCache;
}

namespace tandem::schedule {

// A rectangle of elements [x0, x1) x [y0, y1) of one array (0, 1: inputs, 2: output).
struct Rect {
  std::uint32_t array, x0, y0, x1, y1;
};

// A kernel over n x n f32 arrays, as the static selector sees it: the tile one block covers and
// what each block reads and writes.
struct KernelSpec {
  std::string name;
  std::string description;
  std::uint32_t tile_w, tile_h;  // elements one block covers
  int inputs;                    // n x n input arrays (1 or 2)
  Grid grid(std::uint32_t n) const { return {n / tile_w, n / tile_h}; }
  // What block b of an n x n problem reads and writes.
  std::function<void(std::uint32_t n, Block b, std::vector<Rect>& out)> footprint;
  // Minimum DRAM traffic of one run (every array read or written once): the floor.
  double min_bytes(std::uint32_t n) const;
};

// ---- static selection (no GPU: from the blocks' memory footprints) ----
struct StaticScore {
  Schedule schedule;
  double score;  // accesses per distinct unit in a window: higher, more sharing
};
struct StaticChoice {
  Schedule best;
  std::vector<StaticScore> scores;
  std::uint32_t window;  // co-resident blocks assumed
  std::uint32_t unit;    // side of the square data unit (elements) footprints are counted in
};
// Scores each candidate by how much the footprints of blocks in a window of `window` consecutive
// launch positions overlap: unit accesses per distinct data unit touched by the window, where a
// unit adjacent in memory to another one of the window counts as half a new unit (the distance
// weighting), averaged over windows spread through the grid. Ties keep the earlier
// candidate. No GPU needed. UsageError unless n is a positive multiple of the tile's sides.
StaticChoice static_select(const KernelSpec& k, std::uint32_t n, const std::vector<Schedule>& cands,
                           std::uint32_t window);
// Resident blocks of 256 threads on GPU 0 (SMs x blocks per SM); an H100's 132 x 8 when no GPU.
std::uint32_t default_window();

// ---- GPU side ----
// A rectangle of blocks of a grid: columns [x0, x0 + w), rows [y0, y0 + h).
struct BlockRect {
  std::uint32_t x0{0}, y0{0}, w{0}, h{0};
  Grid grid() const { return {w, h}; }
  std::uint64_t count() const { return std::uint64_t(w) * h; }
  friend bool operator==(const BlockRect& a, const BlockRect& b) {
    return a.x0 == b.x0 && a.y0 == b.y0 && a.w == b.w && a.h == b.h;
  }
};

// Something whose grid can be run in sub-rectangles under any schedule (the controller's view of a
// kernel). Launches are asynchronous on stream().
class BandLauncher {
 public:
  virtual ~BandLauncher() = default;
  virtual std::string name() const = 0;
  virtual Grid grid() const = 0;
  // Runs the blocks of r (inside the grid), ordered by s on the r.w x r.h grid.
  virtual void launch_rect(const Schedule& s, BlockRect r) = 0;
  // Runs the blocks of rows [y0, y0 + rows), all columns.
  void launch(const Schedule& s, std::uint32_t y0, std::uint32_t rows) { launch_rect(s, {0, y0, grid().w, rows}); }
  virtual cudaStream_t stream() const = 0;
};

struct ControllerOptions {
  double profile_fraction{0.10};      // at most this share of the blocks runs in measured chunks
  std::uint32_t min_chunk_blocks{0};  // smallest profiling chunk; 0: 2 waves (2 x default_window())
  bool refine{false};                 // try neighbours of a parameterised winner (one more round trip)
  bool use_cache{true};               // reuse / store the choice in the tuning cache
  bool exhaustive{false};             // without a ranking: profile from the exhaustive candidate list
  // The incumbent: run when nothing is profiled, and kept unless a candidate beats it by
  // switch_margin (default: ranking.front(), else sequential).
  std::optional<Schedule> fallback;
  // Candidates best first, e.g. the static selector's scores sorted (static_ranking()). When
  // given, only the incumbent, sequential (first: the plain reference) and the top
  // max_candidates - 2 others are profiled.
  std::vector<Schedule> ranking;
  std::uint32_t max_candidates{4};  // incumbent included
  // A candidate replaces the incumbent only when its chunk time is below (1 - switch_margin) x the
  // mean of the incumbent's chunks on either side of it. 4%: a piece shows an order's effect on
  // the full grid only to within a few percent (H200, copy-col 16384: tiles measured 0.973x
  // sequential on 61x61 pieces and cost 1.025x on the full grid).
  double switch_margin{0.04};
  // Chunks shorter than this are dominated by launch, ramp-up and tail. When the first (probe)
  // chunk is shorter, chunks grow to reach it; when the budget then holds no candidate pair, the
  // controller stops profiling after that one chunk and runs the rest under the incumbent.
  double min_chunk_seconds{30e-6};
  // Whether profiling can pay. Every launch profiling adds (two per candidate, five for the probe,
  // bridges, a strip end and the split rest) costs launch_seconds plus the tail of a launch: half
  // a block's lifetime, while the last wave drains and the GPU is partly idle. Before any launch:
  // the tail alone is resident / (2 x blocks) of the grid's time, whatever the kernel; if one
  // candidate's launches cost more than max_overhead, nothing is profiled. After the probe: the
  // grid is estimated to take probe time x blocks / probe blocks, and candidates are dropped until
  // their launches cost at most max_overhead of that.
  double launch_seconds{5e-6};
  double max_overhead{0.02};
  TuningCache* cache{nullptr};  // nullptr: TuningCache::global()
};

struct ProfileEntry {
  Schedule schedule;
  BlockRect rect;
  double seconds{0};
  double per_block{0};
  std::string role;  // "probe", "candidate", "incumbent", "refine"
  double ratio{0};   // candidates: seconds / mean of the incumbent's neighbouring chunks
};

struct ControllerResult {
  Schedule chosen;
  Schedule incumbent;
  std::string source;  // "profiled", "cache", "not profiled: ...", "probe: ..."
  std::vector<ProfileEntry> profile;
  double profile_seconds{0}, remainder_seconds{0}, total_seconds{0};
  std::uint64_t profiled_blocks{0};
  Report report;
};

// Profiles a minority of the grid's blocks in sub-rectangles shaped like the grid, the incumbent
// interleaved with each candidate (I C1 I C2 I ...), runs the rest under the winner, and caches
// the choice per kernel, grid and device. Every block runs exactly once, so the output is the same
// whatever is chosen.
ControllerResult run_controlled(BandLauncher& k, const ControllerOptions& o = {});

// The candidates of a static choice, best score first (stable for ties).
std::vector<Schedule> static_ranking(const StaticChoice& c);

}  // namespace tandem::schedule
