// The benchmark kernels' CPU side: specifications, footprints, static selection, references, and
// the controller's profiling plan.
#include "tandem/schedule/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "tandem/device.hpp"
#include "tandem/error.hpp"

namespace tandem::schedule {

namespace {

std::uint32_t clampi(std::int64_t v, std::uint32_t lo, std::uint32_t hi) {
  return std::uint32_t(std::min<std::int64_t>(std::max<std::int64_t>(v, lo), hi));
}

std::vector<KernelSpec> make_specs() {
  std::vector<KernelSpec> s;
  s.push_back({"intimg-row", "row-wise integral image (prefix sums along rows, carry re-read)", 256, 32, 1,
               [](std::uint32_t, Block b, std::vector<Rect>& o) {
                 const std::uint32_t x0 = b.x * 256, y0 = b.y * 32;
                 o.push_back({0, 0, y0, x0 + 256, y0 + 32});
                 o.push_back({2, x0, y0, x0 + 256, y0 + 32});
               }});
  s.push_back({"intimg-col", "column-wise integral image (prefix sums down columns, carry re-read)", 32, 256, 1,
               [](std::uint32_t, Block b, std::vector<Rect>& o) {
                 const std::uint32_t x0 = b.x * 32, y0 = b.y * 256;
                 o.push_back({0, x0, 0, x0 + 32, y0 + 256});
                 o.push_back({2, x0, y0, x0 + 32, y0 + 256});
               }});
  s.push_back({"conv11", "11x11 convolution, clamped borders", 32, 32, 1,
               [](std::uint32_t n, Block b, std::vector<Rect>& o) {
                 const std::int64_t x0 = b.x * 32, y0 = b.y * 32;
                 o.push_back({0, clampi(x0 - 5, 0, n), clampi(y0 - 5, 0, n), clampi(x0 + 37, 0, n), clampi(y0 + 37, 0, n)});
                 o.push_back({2, std::uint32_t(x0), std::uint32_t(y0), std::uint32_t(x0 + 32), std::uint32_t(y0 + 32)});
               }});
  s.push_back({"matmul", "matrix multiplication C = A B, 32x32 shared-memory tiles", 32, 32, 2,
               [](std::uint32_t n, Block b, std::vector<Rect>& o) {
                 const std::uint32_t x0 = b.x * 32, y0 = b.y * 32;
                 o.push_back({0, 0, y0, n, y0 + 32});
                 o.push_back({1, x0, 0, x0 + 32, n});
                 o.push_back({2, x0, y0, x0 + 32, y0 + 32});
               }});
  auto tile = [](std::uint32_t, Block b, std::vector<Rect>& o) {
    const std::uint32_t x0 = b.x * 32, y0 = b.y * 32;
    o.push_back({0, x0, y0, x0 + 32, y0 + 32});
    o.push_back({2, x0, y0, x0 + 32, y0 + 32});
  };
  s.push_back({"copy-row", "matrix copy, warps along rows (coalesced)", 32, 32, 1, tile});
  s.push_back({"copy-col", "matrix copy, warps down columns (uncoalesced)", 32, 32, 1, tile});
  return s;
}

}  // namespace

double KernelSpec::min_bytes(std::uint32_t n) const {
  return double(n) * n * 4.0 * (inputs + 1);
}

double KernelSpec::flops(std::uint32_t n) const {
  const double e = double(n) * n;
  if (name == "matmul") return 2.0 * e * n;
  if (name == "conv11") return 2.0 * 121 * e;
  if (name.rfind("intimg", 0) == 0) return e;
  return 0;
}

const std::vector<KernelSpec>& kernel_specs() {
  static const std::vector<KernelSpec> s = make_specs();
  return s;
}

const KernelSpec& kernel_spec(const std::string& name) {
  std::string known;
  for (const auto& k : kernel_specs()) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  throw UsageError(fmt::format("unknown kernel '{}' (expected one of: {})", name, known));
}

void check_size(std::uint32_t n) {
  if (n == 0 || n % 256 != 0 || n > 65536)
    throw UsageError(fmt::format("size {} must be a positive multiple of 256, at most 65536", n));
}

std::uint32_t default_window() {
  const auto g = gpu_info();
  if (!g.empty() && g[0].sms > 0) {
    const int per_sm = std::max(1, std::min(32, g[0].max_threads_per_sm / 256));
    return std::uint32_t(g[0].sms * per_sm);
  }
  return 132 * 8;
}

StaticChoice static_select(const KernelSpec& k, std::uint32_t n, const std::vector<Schedule>& cands,
                           std::uint32_t window) {
  check_size(n);
  if (cands.empty()) throw UsageError("static selection needs at least one candidate schedule");
  const Grid g = k.grid(n);
  StaticChoice out;
  out.window = std::max<std::uint32_t>(1, std::min<std::uint64_t>(window, g.count()));
  // Count footprints in square units of 32 x 32 elements (4 KiB of f32, one block's tile). Coarser
  // units were tried and mislead: a unit holding several blocks' tiles makes streaming kernels
  // (copies) look as if neighbouring blocks shared data. Large sizes sample fewer windows instead.
  out.unit = 32;
  const std::uint32_t units_x = (n + out.unit - 1) / out.unit;
  const int windows = n >= 8192 ? 2 : 6;
  std::vector<Rect> rects;
  std::vector<std::uint64_t> ids;
  double best = -1;
  for (const Schedule& s : cands) {
    validate(s, g);
    double score = 0;
    for (int wi = 0; wi < windows; ++wi) {
      const std::uint64_t span = g.count() - out.window;
      const std::uint64_t start = windows > 1 ? span * wi / (windows - 1) : 0;
      ids.clear();
      for (std::uint64_t p = start; p < start + out.window; ++p) {
        rects.clear();
        k.footprint(n, s.at(p, g), rects);
        for (const Rect& r : rects) {
          if (r.x1 <= r.x0 || r.y1 <= r.y0) continue;
          for (std::uint32_t uy = r.y0 / out.unit; uy <= (r.y1 - 1) / out.unit; ++uy)
            for (std::uint32_t ux = r.x0 / out.unit; ux <= (r.x1 - 1) / out.unit; ++ux)
              ids.push_back((std::uint64_t(r.array) << 40) | (std::uint64_t(uy) * units_x + ux));
        }
      }
      if (ids.empty()) continue;
      std::sort(ids.begin(), ids.end());
      const std::size_t total = ids.size();
      const std::size_t unique = std::size_t(std::unique(ids.begin(), ids.end()) - ids.begin());
      std::size_t adjacent = 0;  // distinct units next to another one in memory (same unit row)
      for (std::size_t i = 1; i < unique; ++i)
        adjacent += ids[i] == ids[i - 1] + 1 && (ids[i] & 0xFFFFFFFFFFull) % units_x != 0;
      // Accesses per distinct unit; a unit adjacent in memory to another counts as half a new one.
      score += double(total) / (double(unique) - 0.5 * double(adjacent));
    }
    score /= windows;
    out.scores.push_back({s, score});
    if (score > best + 1e-12) {
      best = score;
      out.best = s;
    }
  }
  return out;
}

std::vector<float> make_input(std::uint32_t n, std::uint32_t seed) {
  std::vector<float> v(std::size_t(n) * n);
  std::uint64_t x = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (auto& f : v) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    f = float(x >> 40) / float(1 << 24);  // [0, 1), 24 bits: sums of many stay exact longer
  }
  return v;
}

std::vector<float> conv_weights() {
  std::vector<float> w(121);
  double sum = 0;
  for (int i = 0; i < 121; ++i) {
    w[i] = float(1 + (i * 7) % 13);
    sum += w[i];
  }
  for (auto& f : w) f = float(f / sum);
  return w;
}

std::vector<float> reference(const KernelSpec& k, std::uint32_t n, const std::vector<float>& a,
                             const std::vector<float>& b) {
  check_size(n);
  const std::size_t N = n;
  std::vector<float> out(N * N);
  if (k.name == "intimg-row") {
    for (std::size_t y = 0; y < N; ++y) {
      double s = 0;
      for (std::size_t x = 0; x < N; ++x) out[y * N + x] = float(s += a[y * N + x]);
    }
  } else if (k.name == "intimg-col") {
    std::vector<double> s(N, 0.0);
    for (std::size_t y = 0; y < N; ++y)
      for (std::size_t x = 0; x < N; ++x) out[y * N + x] = float(s[x] += a[y * N + x]);
  } else if (k.name == "conv11") {
    const auto w = conv_weights();
    for (std::size_t y = 0; y < N; ++y)
      for (std::size_t x = 0; x < N; ++x) {
        float acc = 0;
        for (int i = 0; i < 11; ++i) {
          const std::size_t yy = clampi(std::int64_t(y) + i - 5, 0, n - 1);
          for (int j = 0; j < 11; ++j) {
            const std::size_t xx = clampi(std::int64_t(x) + j - 5, 0, n - 1);
            acc = std::fma(w[i * 11 + j], a[yy * N + xx], acc);
          }
        }
        out[y * N + x] = acc;
      }
  } else if (k.name == "matmul") {
    for (std::size_t y = 0; y < N; ++y)
      for (std::size_t x = 0; x < N; ++x) {
        float acc = 0;
        for (std::size_t i = 0; i < N; ++i) acc = std::fma(a[y * N + i], b[i * N + x], acc);
        out[y * N + x] = acc;
      }
  } else {
    out = a;
  }
  return out;
}

double max_rel_error(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i])) / std::max(1.0, std::fabs(double(want[i])));
    if (!(d <= m)) m = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
  }
  return m;
}

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
  if (o.fallback && fits(*o.fallback, g))
    inc = *o.fallback;
  else if (!o.ranking.empty() && fits(o.ranking.front(), g))
    inc = o.ranking.front();
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
    plan.why_not = fmt::format("grid {}x{} ({:.0f} waves): each added launch costs about {:.2f}% of it (half a block "
                               "lifetime), one candidate needs {} launches, more than {:.0f}%",
                               g.w, g.h, double(g.count()) / plan.resident, tail_share * 100, 2 + kExtraLaunches,
                               o.max_overhead * 100);
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
  if (probe_seconds < o.min_chunk_seconds) width = std::ceil(p.piece_w * o.min_chunk_seconds / std::max(probe_seconds, 1e-9));
  cs.width = std::uint32_t(std::min<double>(width, g.w));
  const std::uint64_t c1 = std::uint64_t(cs.width) * p.piece_h;
  cs.estimated_total = probe_seconds * double(g.count()) / double(c0);
  // Even a full-width strip of piece_h rows is too short: chunks cannot be trusted.
  if (probe_seconds * double(c1) / double(c0) < o.min_chunk_seconds * 0.999) {
    cs.why = fmt::format("even {}x{} blocks would take under {:.0f} us", cs.width, p.piece_h, o.min_chunk_seconds * 1e6);
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
    cs.why = fmt::format("chunks of {}x{} blocks (>= {:.0f} us): the budget left ({} blocks) holds no (candidate, "
                         "incumbent) pair", cs.width, p.piece_h, o.min_chunk_seconds * 1e6, left);
  else if (by_overhead == 0)
    cs.why = fmt::format("the grid takes about {:.0f} us: the launches profiling adds (~{:.0f} us each) would cost "
                         "more than {:.0f}% of it", cs.estimated_total * 1e6, cs.launch_cost * 1e6, o.max_overhead * 100);
  return cs;
}

PieceLayout::PieceLayout(Grid g, std::uint32_t piece_h) : g_(g), h_(std::clamp<std::uint32_t>(piece_h, 1, std::max(1u, g.h))) {}

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

std::vector<Schedule> static_ranking(const StaticChoice& c) {
  std::vector<StaticScore> s = c.scores;
  std::stable_sort(s.begin(), s.end(), [](const StaticScore& a, const StaticScore& b) { return a.score > b.score + 1e-12; });
  std::vector<Schedule> out;
  for (const auto& x : s) out.push_back(x.schedule);
  return out;
}

}  // namespace tandem::schedule
