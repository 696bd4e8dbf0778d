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

ProfilePlan plan_profile(Grid g, const ControllerOptions& o, std::uint32_t min_chunk_blocks) {
  ProfilePlan plan;
  if (!(o.profile_fraction > 0 && o.profile_fraction < 1))
    throw UsageError(fmt::format("profile fraction {} must be in (0, 1)", o.profile_fraction));
  if (g.w == 0 || g.h == 0) {
    plan.why_not = "empty grid";
    return plan;
  }
  const auto budget_rows = std::uint32_t(std::floor(o.profile_fraction * g.h));
  const std::uint32_t min_rows = std::max<std::uint32_t>(1, (std::max<std::uint32_t>(1, min_chunk_blocks) + g.w - 1) / g.w);
  const std::uint32_t fit = min_rows ? budget_rows / min_rows : 0;
  if (fit < 2) {
    plan.why_not = fmt::format("grid {}x{}: {:.0f}% of it ({} block rows) holds fewer than 2 chunks of >= {} blocks",
                               g.w, g.h, o.profile_fraction * 100, budget_rows, min_chunk_blocks);
    return plan;
  }
  // Chunk rows: as large as the budget allows for the candidates (and 2 refinement chunks).
  auto cands = candidates(Grid{g.w, min_rows}, o.exhaustive);
  std::uint32_t want = std::uint32_t(cands.size()) + (o.refine ? 2 : 0);
  std::uint32_t rows = std::max(min_rows, budget_rows / std::max<std::uint32_t>(1, want));
  // Larger chunks admit larger tiles: recompute the candidates for the final chunk height.
  cands = candidates(Grid{g.w, rows}, o.exhaustive);
  const std::uint32_t chunks = budget_rows / rows;
  if (cands.size() > chunks) cands.resize(chunks);
  plan.refine_chunks = o.refine ? std::min<std::uint32_t>(2, chunks - std::uint32_t(cands.size())) : 0;
  plan.candidates = std::move(cands);
  plan.chunk_rows = rows;
  return plan;
}

}  // namespace tandem::schedule
