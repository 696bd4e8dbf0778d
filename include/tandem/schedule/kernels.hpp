// The six benchmark kernels of seed 002 (f32, n x n, row-major), their memory footprints, the
// static schedule selector, CPU references, and the controller that picks a schedule by
// measuring a minority of the blocks.
//
//   intimg-row  out[y][x] = sum_{x' <= x} in[y][x']   block: 32 rows x 256 columns; the carry from
//               the left is re-read from the input (naive), so blocks of one row share data
//   intimg-col  out[y][x] = sum_{y' <= y} in[y'][x]   block: 32 columns x 256 rows, carry re-read
//   conv11      out = 11x11 convolution of in (clamped borders)       block: 32 x 32 outputs
//   matmul      C = A * B, simple shared-memory tiled kernel           block: 32 x 32 outputs
//   copy-row    out = in, a warp copies along a row (coalesced)        block: 32 x 32
//   copy-col    out = in, a warp copies down a column (uncoalesced)    block: 32 x 32
//
// Sizes must be multiples of 256. The GPU parts (KernelRunner, run_controlled) exist in CUDA
// builds; elsewhere they throw NoDeviceError.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/report.hpp"
#include "tandem/schedule.hpp"

namespace tandem {
class TuningCache;
}

namespace tandem::schedule {

// A rectangle of elements [x0, x1) x [y0, y1) of one array (0, 1: inputs, 2: output).
struct Rect {
  std::uint32_t array, x0, y0, x1, y1;
};

struct KernelSpec {
  std::string name;
  std::string description;
  std::uint32_t tile_w, tile_h;  // elements one block covers
  int inputs;                    // n x n input arrays (1 or 2)
  Grid grid(std::uint32_t n) const { return {n / tile_w, n / tile_h}; }
  // What block b of an n x n problem reads and writes.
  std::function<void(std::uint32_t n, Block b, std::vector<Rect>& out)> footprint;
  // Minimum DRAM traffic and arithmetic of one run (the floor).
  double min_bytes(std::uint32_t n) const;
  double flops(std::uint32_t n) const;
};

const std::vector<KernelSpec>& kernel_specs();
// UsageError naming the known kernels when `name` is unknown.
const KernelSpec& kernel_spec(const std::string& name);
// UsageError unless n is a positive multiple of 256 and at most 65536.
void check_size(std::uint32_t n);

// ---- static selection (the seed's compiler path) ----
struct StaticScore {
  Schedule schedule;
  double score;  // accesses per distinct unit in a window: higher, more sharing
};
struct StaticChoice {
  Schedule best;
  std::vector<StaticScore> scores;
  std::uint32_t window;   // co-resident blocks assumed
  std::uint32_t unit;     // side of the square data unit (elements) footprints are counted in
};
// Scores each candidate by how much the footprints of blocks in a window of `window` consecutive
// launch positions overlap: unit accesses per distinct data unit touched by the window, where a
// unit adjacent in memory to another one of the window counts as half a new unit (the distance
// weighting), averaged over windows spread through the grid. Ties keep the earlier
// candidate. No GPU needed.
StaticChoice static_select(const KernelSpec& k, std::uint32_t n, const std::vector<Schedule>& cands,
                           std::uint32_t window);
// Resident blocks of 256 threads on GPU 0 (SMs x blocks per SM); an H100's 132 x 8 when no GPU.
std::uint32_t default_window();

// ---- CPU side of the kernels ----
std::vector<float> make_input(std::uint32_t n, std::uint32_t seed);
// The 11x11 filter conv11 uses (normalised, asymmetric so a transposed result would differ).
std::vector<float> conv_weights();
// Reference results computed on the CPU with the same summation order as the GPU where the
// kernel allows it (conv11, matmul, copies: bit-exact; integral images: compare with tolerance).
std::vector<float> reference(const KernelSpec& k, std::uint32_t n, const std::vector<float>& a,
                             const std::vector<float>& b);
// Largest |got - want| / max(1, |want|); infinity for a size mismatch or NaN.
double max_rel_error(const std::vector<float>& got, const std::vector<float>& want);

// ---- GPU side ----
// Something whose grid can be run in bands of whole block rows under any schedule (the
// controller's view of a kernel). launch() is asynchronous on stream().
class BandLauncher {
 public:
  virtual ~BandLauncher() = default;
  virtual std::string name() const = 0;
  virtual Grid grid() const = 0;
  // Runs the blocks of rows [y0, y0 + rows) of the grid, ordered by s on the W x rows band.
  virtual void launch(const Schedule& s, std::uint32_t y0, std::uint32_t rows) = 0;
  virtual void* stream() const = 0;  // cudaStream_t
};

// Device buffers, inputs and launches for one benchmark kernel at one size.
class KernelRunner : public BandLauncher {
 public:
  KernelRunner(const KernelSpec& k, std::uint32_t n, std::uint32_t seed = 1);
  ~KernelRunner() override;
  std::string name() const override;
  Grid grid() const override;
  void launch(const Schedule& s, std::uint32_t y0, std::uint32_t rows) override;
  void* stream() const override;
  // Dispatch order from an atomic ticket instead of blockIdx (exact launch order).
  void set_ticket(bool on);
  // Hilbert positions from a precomputed device table (default, nullopt or true) or evaluated per block.
  void set_hilbert_table(std::optional<bool> on);
  // One launch of the whole grid under s, timed with events (seconds).
  double time_full(const Schedule& s);
  void poison_output();
  std::vector<float> output() const;
  const std::vector<float>& input(int i) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct ControllerOptions {
  double profile_fraction{0.10};  // at most this share of the blocks runs under trial schedules
  std::uint32_t min_chunk_blocks{0};  // smallest profiling chunk; 0: 2 waves (2 x default_window())
  bool refine{false};             // try neighbours of the best parameterised schedule (costs a host round trip)
  bool use_cache{true};           // reuse / store the choice in the tuning cache
  bool exhaustive{false};         // profile the exhaustive candidate list
  std::optional<Schedule> fallback;  // used when the grid is too small to profile (default: sequential)
  // Chunks shorter than this (median) are dominated by launch, ramp-up and tail: the profile is
  // not trusted, the rest runs under the fallback and that decision is cached.
  double min_chunk_seconds{30e-6};
  TuningCache* cache{nullptr};    // nullptr: TuningCache::global()
};

struct ProfileEntry {
  Schedule schedule;
  std::uint32_t y0, rows;
  double seconds;
  double per_block;
};

struct ControllerResult {
  Schedule chosen;
  std::string source;  // "profiled", "cache", "not profiled: ..."
  std::vector<ProfileEntry> profile;
  double profile_seconds{0}, remainder_seconds{0}, total_seconds{0};
  Report report;
};

// Profiles a minority of the grid's block rows in consecutive chunks, one candidate each, runs the
// rest under the fastest, and caches the choice per kernel, grid and device. Every block runs
// exactly once, so the output is the same whatever is chosen.
ControllerResult run_controlled(BandLauncher& k, const ControllerOptions& o = {});

// The controller's profiling plan for a grid (pure; exposed for tests): the candidates that fit a
// chunk and the rows per chunk. Empty when the budget holds fewer than two chunks.
struct ProfilePlan {
  std::vector<Schedule> candidates;
  std::uint32_t chunk_rows{0};
  std::uint32_t refine_chunks{0};
  std::string why_not;  // set when empty
};
ProfilePlan plan_profile(Grid g, const ControllerOptions& o, std::uint32_t min_chunk_blocks);

}  // namespace tandem::schedule
