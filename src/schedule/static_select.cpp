// Static schedule selection from the memory footprints of blocks, and the default window of
// co-resident blocks.
#include "tandem/schedule/controller.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"

namespace tandem::schedule {

double KernelSpec::min_bytes(std::uint32_t n) const { return double(n) * n * 4.0 * (inputs + 1); }

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
  if (n == 0 || n % k.tile_w || n % k.tile_h)
    throw UsageError(
        fmt::format("size {} must be a positive multiple of {}'s tile ({}x{})", n, k.name, k.tile_w, k.tile_h));
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

std::vector<Schedule> static_ranking(const StaticChoice& c) {
  std::vector<StaticScore> s = c.scores;
  std::stable_sort(s.begin(), s.end(),
                   [](const StaticScore& a, const StaticScore& b) { return a.score > b.score + 1e-12; });
  std::vector<Schedule> out;
  for (const auto& x : s) out.push_back(x.schedule);
  return out;
}

}  // namespace tandem::schedule
