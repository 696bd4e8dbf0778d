// The controller's profiling plan: which candidates fit the budget, the chunk sizes after the
// probe, and the pieces cut from the grid. Pure code, tested on the CPU.
#include "schedule/profile_plan.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem::schedule {

namespace {
// Launches profiling adds besides two per candidate: the probe, two bridges, a strip end, and the
// rest in two parts instead of one.
constexpr int kExtraLaunches = 5;
}  // namespace

ProfilePlan plan_profile(Grid g, const ControllerOptions& o, std::uint32_t min_chunk_blocks) {
  ProfilePlan plan;
  if (!(o.profile_fraction > 0 && o.profile_fraction < 1))
    throw UsageError(fmt::format("profile fraction {} must be in (0, 1)", o.profile_fraction));
  if (g.w == 0 || g.h == 0) {
    plan.candidates.push_back(Schedule::sequential());
    plan.why_not = "empty grid";
    return plan;
  }
  // The incumbent: the caller's fallback, else the best-ranked schedule, else sequential.
  Schedule inc = Schedule::sequential();
  if (o.fallback && fits(*o.fallback, g)) inc = *o.fallback;
  else if (!o.ranking.empty() && fits(o.ranking.front(), g)) inc = o.ranking.front();
  plan.candidates.push_back(inc);
  const std::uint64_t budget = std::uint64_t(std::floor(o.profile_fraction * double(g.count())));
  plan.budget_blocks = budget;
  const std::uint64_t min_chunk = std::max<std::uint32_t>(1, min_chunk_blocks);
  plan.resident = std::max<std::uint32_t>(1, min_chunk_blocks / 2);
  // The probe and one (candidate, incumbent) pair at least.
  if (budget < 3 * min_chunk) {
    plan.why_not = fmt::format("grid {}x{}: {:.0f}% of it ({} blocks) holds fewer than 3 chunks of >= {} blocks", g.w,
                               g.h, o.profile_fraction * 100, budget, min_chunk);
    return plan;
  }
  // Before any launch: every launch profiling adds costs at least the tail of a launch, about half
  // a block lifetime, which is resident / count of the whole grid's time whatever the kernel's
  // speed. One candidate means 2 + kExtraLaunches more launches; when they cost more than
  // max_overhead, the grid runs in one launch under the incumbent.
  const double tail_share = 0.5 * double(plan.resident) / double(g.count());
  if ((2 + kExtraLaunches) * tail_share > o.max_overhead) {
    plan.why_not = fmt::format(
        "grid {}x{} ({:.0f} waves): each added launch costs about {:.2f}% of it (half a block "
        "lifetime), one candidate needs {} launches, more than {:.0f}%",
        g.w, g.h, double(g.count()) / plan.resident, tail_share * 100, 2 + kExtraLaunches, o.max_overhead * 100);
    return plan;
  }
  const std::uint32_t K = std::max<std::uint32_t>(2, o.max_candidates);
  const std::uint64_t c0 = std::max<std::uint64_t>(min_chunk, budget / (1 + 2 * std::uint64_t(K - 1)));
  // A piece shaped like the grid (w / h ~ W / H), so that an order is measured on a region whose
  // co-resident window looks like the full grid's, not on a thin band of rows.
  std::uint32_t h = std::uint32_t(std::lround(std::sqrt(double(c0) * g.h / g.w)));
  h = std::clamp<std::uint32_t>(h, 1, g.h);
  // Width: c0 / h rounded down (the pieces then fit the budget), but at least min_chunk blocks.
  std::uint64_t w = std::max<std::uint64_t>(c0 / h, (min_chunk + h - 1) / h);
  if (w >= g.w) {
    w = g.w;
    h = std::uint32_t(std::min<std::uint64_t>(g.h, (c0 + g.w - 1) / g.w));
  }
  plan.piece_w = std::uint32_t(w);
  plan.piece_h = h;
  const Grid pg{plan.piece_w, plan.piece_h};
  if (!fits(rescale(inc, g, pg), pg)) {
    plan.why_not = fmt::format("the incumbent {} does not fit a {}x{} chunk", to_string(inc), pg.w, pg.h);
    return plan;
  }
  std::vector<Schedule> seen{rescale(inc, g, pg)};
  auto add = [&](const Schedule& s) {
    const Schedule a = rescale(s, g, pg);
    if (plan.candidates.size() >= K || !fits(s, g) || !fits(a, pg)) return;
    if (std::find(seen.begin(), seen.end(), a) != seen.end()) return;
    seen.push_back(a);
    plan.candidates.push_back(s);
  };
  if (!o.ranking.empty()) {
    // Sequential first (the plain reference: when the budget holds one candidate, the static
    // choice is checked against it), then the static selector's top few.
    add(Schedule::sequential());
    for (const Schedule& s : o.ranking) add(s);
  } else {
    for (const Schedule& s : candidates(g, o.exhaustive)) add(s);
  }
  if (plan.candidates.size() < 2) plan.why_not = "no candidate other than the incumbent fits a chunk";
  return plan;
}

ChunkSizing size_chunks(Grid g, const ProfilePlan& p, double probe_seconds, const ControllerOptions& o) {
  ChunkSizing cs;
  if (p.piece_w == 0 || p.piece_h == 0 || p.candidates.size() < 2) return cs;
  const std::uint64_t c0 = std::uint64_t(p.piece_w) * p.piece_h;
  double width = p.piece_w;
  if (probe_seconds < o.min_chunk_seconds)
    width = std::ceil(p.piece_w * o.min_chunk_seconds / std::max(probe_seconds, 1e-9));
  cs.width = std::uint32_t(std::min<double>(width, g.w));
  const std::uint64_t c1 = std::uint64_t(cs.width) * p.piece_h;
  cs.estimated_total = probe_seconds * double(g.count()) / double(c0);
  // Even a full-width strip of piece_h rows is too short: chunks cannot be trusted.
  if (probe_seconds * double(c1) / double(c0) < o.min_chunk_seconds * 0.999) {
    cs.why =
        fmt::format("even {}x{} blocks would take under {:.0f} us", cs.width, p.piece_h, o.min_chunk_seconds * 1e6);
    return cs;
  }
  const std::uint64_t left = p.budget_blocks > c0 ? p.budget_blocks - c0 : 0;
  const std::uint64_t by_budget = std::min<std::uint64_t>(p.candidates.size() - 1, left / (2 * c1));
  // Launches added: 2 per candidate and kExtraLaunches for the probe, bridges, a strip end and
  // the rest in two parts.
  cs.launch_cost = o.launch_seconds + 0.5 * probe_seconds / double(c0) * p.resident;
  const double allowed = o.max_overhead * cs.estimated_total / std::max(cs.launch_cost, 1e-12);
  const std::uint64_t by_overhead = allowed >= 2 + kExtraLaunches ? std::uint64_t((allowed - kExtraLaunches) / 2) : 0;
  cs.candidates = std::uint32_t(std::min(by_budget, by_overhead));
  if (by_budget == 0)
    cs.why = fmt::format(
        "chunks of {}x{} blocks (>= {:.0f} us): the budget left ({} blocks) holds no (candidate, "
        "incumbent) pair",
        cs.width, p.piece_h, o.min_chunk_seconds * 1e6, left);
  else if (by_overhead == 0)
    cs.why = fmt::format(
        "the grid takes about {:.0f} us: the launches profiling adds (~{:.0f} us each) would cost "
        "more than {:.0f}% of it",
        cs.estimated_total * 1e6, cs.launch_cost * 1e6, o.max_overhead * 100);
  return cs;
}

PieceLayout::PieceLayout(Grid g, std::uint32_t piece_h)
    : g_(g), h_(std::clamp<std::uint32_t>(piece_h, 1, std::max(1u, g.h))) {}

bool PieceLayout::can_take(std::uint32_t w) const {
  w = std::min(std::max(w, 1u), g_.w);
  if (g_.w == 0) return false;
  if (x_ + w <= g_.w) return std::uint64_t(y_) + h_ <= g_.h;
  return std::uint64_t(y_) + 2 * std::uint64_t(h_) <= g_.h;
}

bool PieceLayout::take(std::uint32_t w, BlockRect& piece, std::vector<BlockRect>& skipped) {
  if (!can_take(w)) return false;
  w = std::min(std::max(w, 1u), g_.w);
  if (x_ + w > g_.w) {
    skipped.push_back({x_, y_, g_.w - x_, h_});
    x_ = 0;
    y_ += h_;
  }
  piece = {x_, y_, w, h_};
  x_ += w;
  if (x_ == g_.w) {
    x_ = 0;
    y_ += h_;
  }
  return true;
}

std::vector<BlockRect> PieceLayout::rest() const {
  std::vector<BlockRect> r;
  std::uint32_t y = y_;
  if (x_ > 0) {
    r.push_back({x_, y_, g_.w - x_, h_});
    y += h_;
  }
  if (y < g_.h) r.push_back({0, y, g_.w, g_.h - y});
  return r;
}

}  // namespace tandem::schedule
