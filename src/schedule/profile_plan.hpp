// Internal: the controller's profiling plan, pure code tested on the CPU (profile_plan.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/schedule.hpp"
#include "tandem/schedule/controller.hpp"

namespace tandem::schedule {

// The controller's profiling plan for a grid.
struct ProfilePlan {
  std::vector<Schedule> candidates;      // incumbent first; all fit a piece_w x piece_h grid
  std::uint32_t piece_w{0}, piece_h{0};  // the probe chunk; the height is kept for every chunk
  std::uint64_t budget_blocks{0};
  std::uint32_t resident{0};  // co-resident blocks (min_chunk_blocks / 2), for the launch tail
  std::string why_not;        // set when nothing is profiled (candidates then holds the incumbent only)
};
ProfilePlan plan_profile(Grid g, const ControllerOptions& o, std::uint32_t min_chunk_blocks);

// After the probe chunk (piece_w x piece_h blocks in probe_seconds): the chunk width every further
// chunk uses (wide enough to take min_chunk_seconds at the probe's rate) and how many candidates
// fit the budget left, two chunks each (candidate, incumbent), and the launch overhead allowed
// (max_overhead). 0 candidates: stop profiling; `why` says which limit stopped it.
struct ChunkSizing {
  std::uint32_t width{0};
  std::uint32_t candidates{0};
  double estimated_total{0};  // seconds for the whole grid at the probe's rate
  double launch_cost{0};      // seconds one added launch is estimated to cost
  std::string why;
};
ChunkSizing size_chunks(Grid g, const ProfilePlan& p, double probe_seconds, const ControllerOptions& o);

// Cuts pieces of a fixed height from the top of a grid, left to right in strips; what is cut
// before a piece to make room (the end of a strip too narrow for it) and what is left at the end
// (rest()) together with the pieces cover every block exactly once.
class PieceLayout {
 public:
  PieceLayout(Grid g, std::uint32_t piece_h);
  // A piece of w columns (fewer when the grid is narrower). `skipped` receives the end of the
  // current strip when the piece does not fit there. False when no strip of full height is left.
  bool take(std::uint32_t w, BlockRect& piece, std::vector<BlockRect>& skipped);
  // Whether a piece of w columns can still be taken.
  bool can_take(std::uint32_t w) const;
  // Everything not yet handed out: the end of the current strip and the rows below it.
  std::vector<BlockRect> rest() const;

 private:
  Grid g_;
  std::uint32_t h_, x_{0}, y_{0};
};

}  // namespace tandem::schedule
