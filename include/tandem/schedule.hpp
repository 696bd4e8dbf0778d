// Block schedules: the order in which the thread blocks of a 2D grid run.
//
// A schedule maps the launch position p (0..W*H-1) of a block to the logical block (x, y) it works
// on. Kernels launched through the schedule launcher (tandem/schedule/launch.cuh) read their
// logical block from it, so launch order becomes (approximately, or exactly with a ticket counter)
// execution order, and blocks that share data can be made to run at the same time.
//
// Everything in this header is pure __host__ __device__ code: no CUDA runtime calls, tested
// exhaustively on the CPU.
//
// Styles (string form in brackets, see parse_schedule):
//   sequential            row-major                                   [sequential]
//   strided S, G          groups of G consecutive row-major blocks; groups taken S apart: group
//                         0, S, 2S, ..., then 1, 1+S, ... (S = W, G = 1 is column-major)
//                                                                     [strided:S:G]
//   zigzag                row-major with odd rows reversed            [zigzag]
//   tiled TW x TH         TW x TH tiles, row-major inside a tile and between tiles; partial tiles
//                         at the right and bottom edges (tiled:Kx<H> is CUTLASS's threadblock
//                         swizzle of width K)                         [tiled:TWxTH]
//   hilbert               generalised Hilbert curve for any W x H     [hilbert]
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tandem/cuda/hd.hpp"

namespace tandem::schedule {

enum class Style : std::uint8_t { sequential, strided, zigzag, tiled, hilbert };

struct Block {
  std::uint32_t x{0}, y{0};
  friend constexpr bool operator==(Block a, Block b) { return a.x == b.x && a.y == b.y; }
};

struct Grid {
  std::uint32_t w{0}, h{0};
  TANDEM_HD constexpr std::uint64_t count() const { return std::uint64_t(w) * h; }
  friend constexpr bool operator==(Grid a, Grid b) { return a.w == b.w && a.h == b.h; }
};

namespace detail {

TANDEM_HD constexpr Block strided_at(std::uint64_t p, Grid g, std::uint64_t S, std::uint64_t G) {
  const std::uint64_t n = g.count();
  const std::uint64_t ng = (n + G - 1) / G;         // groups
  const std::uint64_t last_len = n - (ng - 1) * G;  // blocks in the last (maybe partial) group
  const std::uint64_t R = (ng + S - 1) / S;         // group rows (groups g = r*S + c)
  const std::uint64_t full = ng - (R - 1) * S;      // columns holding R groups (1..S); the rest R-1
  const std::uint64_t A = (full - 1) * R * G;       // blocks in the full columns before the last group's
  std::uint64_t c, r, j;
  if (p < A) {
    const std::uint64_t q = p / G;
    j = p % G;
    c = q / R;
    r = q % R;
  } else if (p < A + (R - 1) * G + last_len) {  // the column ending with the partial group
    const std::uint64_t q = p - A;
    c = full - 1;
    r = q / G;
    j = q % G;
  } else {  // columns of R-1 full groups (R >= 2 here)
    const std::uint64_t q = p - A - (R - 1) * G - last_len;
    const std::uint64_t per = (R - 1) * G;
    c = full + q / per;
    const std::uint64_t rem = q % per;
    r = rem / G;
    j = rem % G;
  }
  const std::uint64_t i = (r * S + c) * G + j;
  return {std::uint32_t(i % g.w), std::uint32_t(i / g.w)};
}

TANDEM_HD constexpr Block tiled_at(std::uint64_t p, Grid g, std::uint64_t TW, std::uint64_t TH) {
  const std::uint64_t nty = (g.h + TH - 1) / TH, ntx = (g.w + TW - 1) / TW;
  std::uint64_t ty = p / (std::uint64_t(g.w) * TH);
  if (ty >= nty) ty = nty - 1;
  const std::uint64_t th = ty == nty - 1 ? g.h - ty * TH : TH;
  const std::uint64_t rem = p - ty * g.w * TH;
  std::uint64_t tx = rem / (TW * th);
  if (tx >= ntx) tx = ntx - 1;
  const std::uint64_t tw = tx == ntx - 1 ? g.w - tx * TW : TW;
  const std::uint64_t r2 = rem - tx * TW * th;
  return {std::uint32_t(tx * TW + r2 % tw), std::uint32_t(ty * TH + r2 / tw)};
}

TANDEM_HD constexpr std::int64_t sgn(std::int64_t v) { return (v > 0) - (v < 0); }
TANDEM_HD constexpr std::int64_t iabs(std::int64_t v) { return v < 0 ? -v : v; }
// Python's floor division by 2 (the reference algorithm relies on it for negative vectors).
TANDEM_HD constexpr std::int64_t floor_half(std::int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// Generalised Hilbert curve ("gilbert"), after Jakub Červený's gilbert2d
// (https://github.com/jakubcerveny/gilbert, BSD-2-Clause): the rectangle is split recursively into
// two (long case) or three (standard case) sub-rectangles whose curves join end to start. Here the
// recursion is descended once for one index: at each level the sub-rectangle holding the index
// is found by counting the cells of the ones before it, so the cost is O(log(max(W, H))).
TANDEM_HD constexpr Block hilbert_at(std::uint64_t p, Grid g) {
  std::int64_t x = 0, y = 0, ax, ay, bx, by;
  if (g.w >= g.h) {
    ax = g.w;
    ay = 0;
    bx = 0;
    by = g.h;
  } else {
    ax = 0;
    ay = g.h;
    bx = g.w;
    by = 0;
  }
  std::uint64_t idx = p;
  for (;;) {
    const std::int64_t w = iabs(ax + ay), h = iabs(bx + by);
    const std::int64_t dax = sgn(ax), day = sgn(ay), dbx = sgn(bx), dby = sgn(by);
    if (h == 1) return {std::uint32_t(x + dax * std::int64_t(idx)), std::uint32_t(y + day * std::int64_t(idx))};
    if (w == 1) return {std::uint32_t(x + dbx * std::int64_t(idx)), std::uint32_t(y + dby * std::int64_t(idx))};
    std::int64_t ax2 = floor_half(ax), ay2 = floor_half(ay), bx2 = floor_half(bx), by2 = floor_half(by);
    const std::int64_t w2 = iabs(ax2 + ay2), h2 = iabs(bx2 + by2);
    if (2 * w > 3 * h) {
      if ((w2 % 2) && w > 2) {
        ax2 += dax;
        ay2 += day;
      }
      // long case: (x, y, ax2, ay2, bx, by), then (x+ax2, y+ay2, ax-ax2, ay-ay2, bx, by)
      const std::uint64_t n1 = std::uint64_t(iabs(ax2 + ay2) * h);
      if (idx < n1) {
        ax = ax2;
        ay = ay2;
      } else {
        idx -= n1;
        x += ax2;
        y += ay2;
        ax -= ax2;
        ay -= ay2;
      }
    } else {
      if ((h2 % 2) && h > 2) {
        bx2 += dbx;
        by2 += dby;
      }
      // standard case: up (x, y, bx2, by2, ax2, ay2); across (x+bx2, y+by2, ax, ay, bx-bx2, by-by2);
      // down (x+(ax-dax)+(bx2-dbx), y+(ay-day)+(by2-dby), -bx2, -by2, -(ax-ax2), -(ay-ay2))
      const std::uint64_t n1 = std::uint64_t(iabs(bx2 + by2) * iabs(ax2 + ay2));
      const std::uint64_t n2 = std::uint64_t(w * iabs(bx - bx2 + by - by2));
      if (idx < n1) {
        const std::int64_t nax = bx2, nay = by2, nbx = ax2, nby = ay2;
        ax = nax;
        ay = nay;
        bx = nbx;
        by = nby;
      } else if (idx < n1 + n2) {
        idx -= n1;
        x += bx2;
        y += by2;
        bx -= bx2;
        by -= by2;
      } else {
        idx -= n1 + n2;
        x += (ax - dax) + (bx2 - dbx);
        y += (ay - day) + (by2 - dby);
        const std::int64_t nax = -bx2, nay = -by2, nbx = -(ax - ax2), nby = -(ay - ay2);
        ax = nax;
        ay = nay;
        bx = nbx;
        by = nby;
      }
    }
  }
}

}  // namespace detail

// One schedule: a style and its parameters (a = S or TW, b = G or TH; unused ones are 0).
struct Schedule {
  Style style{Style::sequential};
  std::uint32_t a{0}, b{0};

  // Logical block at launch position p (p < g.count(); the schedule must be valid for g).
  TANDEM_HD constexpr Block at(std::uint64_t p, Grid g) const {
    switch (style) {
      case Style::strided: return detail::strided_at(p, g, a, b);
      case Style::zigzag: {
        const std::uint32_t y = std::uint32_t(p / g.w), x = std::uint32_t(p % g.w);
        return {(y & 1u) ? g.w - 1 - x : x, y};
      }
      case Style::tiled: return detail::tiled_at(p, g, a, b);
      case Style::hilbert: return detail::hilbert_at(p, g);
      case Style::sequential:
      default: return {std::uint32_t(p % g.w), std::uint32_t(p / g.w)};
    }
  }

  friend constexpr bool operator==(const Schedule& l, const Schedule& r) {
    return l.style == r.style && l.a == r.a && l.b == r.b;
  }

  static constexpr Schedule sequential() { return {Style::sequential, 0, 0}; }
  static constexpr Schedule strided(std::uint32_t s, std::uint32_t g) { return {Style::strided, s, g}; }
  static constexpr Schedule zigzag() { return {Style::zigzag, 0, 0}; }
  static constexpr Schedule tiled(std::uint32_t tw, std::uint32_t th) { return {Style::tiled, tw, th}; }
  static constexpr Schedule hilbert() { return {Style::hilbert, 0, 0}; }
};

// ---- host-side helpers (src/schedule/schedule.cpp) ----

// "sequential", "strided:S:G", "zigzag", "tiled:WxH", "hilbert". Throws UsageError naming the
// problem for an unknown style or malformed parameters.
Schedule parse_schedule(const std::string& text);
// The canonical string form, parseable by parse_schedule.
std::string to_string(const Schedule& s);
std::string style_name(Style s);

// Throws UsageError when the parameters do not fit the grid: empty grid, S or G < 1, S larger
// than the number of groups, G larger than the grid, tile larger than the grid.
void validate(const Schedule& s, Grid g);
bool fits(const Schedule& s, Grid g) noexcept;

// Parses "WxH" (e.g. "16x9"); UsageError when malformed or zero.
Grid parse_grid(const std::string& text);

// The whole order: element p is the logical block at launch position p.
std::vector<Block> order(const Schedule& s, Grid g);
// The inverse: rank[y * W + x] = launch position of block (x, y). Throws Error if s is not a
// bijection on g (never, for a valid schedule).
std::vector<std::uint32_t> ranks(const Schedule& s, Grid g);
// A small grid of launch positions, one row per line, right-aligned.
std::string draw(const Schedule& s, Grid g);
// JSON list of [x, y] in launch order.
std::string order_json(const Schedule& s, Grid g);

// The candidates the controller tries, in order (outer loop styles, inner loop parameters in a
// geometric progression), all valid for g: sequential, zigzag, tiled K x K for K = 4, 16, ...,
// max_tile (ratio 4), strided column-major (S = W, G = 1) and hilbert. `exhaustive` adds more parameters
// (rectangular tiles, CUTLASS-style strips, strided groups) for benchmarks.
std::vector<Schedule> candidates(Grid g, bool exhaustive = false, std::uint32_t max_tile = 16);
// The same order for another grid: parameters tied to the grid's size follow it (strided:W:1 stays
// column-major, strided:2:W stays even-then-odd rows, strided:W/8:8 stays 8-wide column strips,
// tiled:KxH stays full-height strips); tiles larger than `to` are clipped to it. Used to run a
// full-grid schedule on a sub-rectangle. The result may still not fit `to` (check with fits()).
Schedule rescale(const Schedule& s, Grid from, Grid to);
// Neighbours of `best` for the refinement step (tiles with one side doubled or halved,
// neighbouring strides), valid for g and different from best.
std::vector<Schedule> refinements(const Schedule& best, Grid g);

}  // namespace tandem::schedule
