// Block schedules: every style is a bijection on every grid (exhaustive for small grids, sampled
// for large ones), the Hilbert curve matches an independent recursive port of gilbert2d, the
// parser rejects what it should, and the controller's candidate lists fit their grid.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/schedule.hpp"

using namespace tandem;
using namespace tandem::schedule;

namespace {

// Checks that s visits every block of g exactly once; returns a message or "".
std::string bijection_error(const Schedule& s, Grid g) {
  std::vector<unsigned char> seen(g.count(), 0);
  for (std::uint64_t p = 0; p < g.count(); ++p) {
    const Block b = s.at(p, g);
    if (b.x >= g.w || b.y >= g.h) return "out of grid at p=" + std::to_string(p);
    auto& v = seen[std::uint64_t(b.y) * g.w + b.x];
    if (v) return "duplicate at p=" + std::to_string(p);
    v = 1;
  }
  return {};
}

// Independent reference: the recursive generator of gilbert2d, written as in the original.
void gilbert_ref(std::int64_t x, std::int64_t y, std::int64_t ax, std::int64_t ay, std::int64_t bx, std::int64_t by,
                 std::vector<Block>& out) {
  auto sgn = [](std::int64_t v) { return std::int64_t((v > 0) - (v < 0)); };
  auto fdiv2 = [](std::int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
  const std::int64_t w = std::llabs(ax + ay), h = std::llabs(bx + by);
  const std::int64_t dax = sgn(ax), day = sgn(ay), dbx = sgn(bx), dby = sgn(by);
  if (h == 1) {
    for (std::int64_t i = 0; i < w; ++i, x += dax, y += day) out.push_back({std::uint32_t(x), std::uint32_t(y)});
    return;
  }
  if (w == 1) {
    for (std::int64_t i = 0; i < h; ++i, x += dbx, y += dby) out.push_back({std::uint32_t(x), std::uint32_t(y)});
    return;
  }
  std::int64_t ax2 = fdiv2(ax), ay2 = fdiv2(ay), bx2 = fdiv2(bx), by2 = fdiv2(by);
  const std::int64_t w2 = std::llabs(ax2 + ay2), h2 = std::llabs(bx2 + by2);
  if (2 * w > 3 * h) {
    if ((w2 % 2) && w > 2) ax2 += dax, ay2 += day;
    gilbert_ref(x, y, ax2, ay2, bx, by, out);
    gilbert_ref(x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by, out);
  } else {
    if ((h2 % 2) && h > 2) bx2 += dbx, by2 += dby;
    gilbert_ref(x, y, bx2, by2, ax2, ay2, out);
    gilbert_ref(x + bx2, y + by2, ax, ay, bx - bx2, by - by2, out);
    gilbert_ref(x + (ax - dax) + (bx2 - dbx), y + (ay - day) + (by2 - dby), -bx2, -by2, -(ax - ax2), -(ay - ay2), out);
  }
}

std::vector<Block> gilbert(Grid g) {
  std::vector<Block> out;
  if (g.w >= g.h) gilbert_ref(0, 0, g.w, 0, 0, g.h, out);
  else gilbert_ref(0, 0, 0, g.h, g.w, 0, out);
  return out;
}

}  // namespace

TEST(Schedule, SimpleStylesExhaustiveSmallGrids) {
  for (std::uint32_t w = 1; w <= 24; ++w)
    for (std::uint32_t h = 1; h <= 24; ++h) {
      const Grid g{w, h};
      for (Schedule s : {Schedule::sequential(), Schedule::zigzag(), Schedule::hilbert()})
        ASSERT_EQ(bijection_error(s, g), "") << to_string(s) << " on " << w << "x" << h;
      // Every tile size up to 16x16 grids; on larger grids a spread of sizes, edges included.
      std::vector<std::uint32_t> tws, ths;
      for (std::uint32_t t = 1; t <= w; ++t)
        if (w <= 16 || t <= 3 || t == 5 || t + 1 >= w || t == w / 2) tws.push_back(t);
      for (std::uint32_t t = 1; t <= h; ++t)
        if (h <= 16 || t <= 3 || t == 5 || t + 1 >= h || t == h / 2) ths.push_back(t);
      for (std::uint32_t tw : tws)
        for (std::uint32_t th : ths)
          ASSERT_EQ(bijection_error(Schedule::tiled(tw, th), g), "") << tw << "x" << th << " on " << w << "x" << h;
    }
}

TEST(Schedule, StridedExhaustiveSmallGrids) {
  // Every stride and granularity on grids up to 8x8; on larger ones up to 24x24 every stride
  // with a few granularities (1, 2, 3, 7, W, W*H) and strides
  // (all up to 12, W, H, half and the last two).
  for (std::uint32_t w = 1; w <= 24; ++w)
    for (std::uint32_t h = 1; h <= 24; ++h) {
      const Grid g{w, h};
      const auto n = std::uint32_t(g.count());
      std::vector<std::uint32_t> gs;
      if (w <= 8 && h <= 8) {
        for (std::uint32_t G = 1; G <= n; ++G) gs.push_back(G);
      } else {
        for (std::uint32_t G : {1u, 2u, 3u, 7u, w, n}) {
          if (G <= n) gs.push_back(G);
        }
      }
      for (std::uint32_t G : gs) {
        const std::uint32_t groups = (n + G - 1) / G;
        for (std::uint32_t S = 1; S <= groups; ++S) {
          const bool small = w <= 8 && h <= 8;
          if (!small && S > 12 && S != w && S != h && S != groups / 2 && S + 1 < groups) continue;
          const Schedule s = Schedule::strided(S, G);
          ASSERT_TRUE(fits(s, g));
          ASSERT_EQ(bijection_error(s, g), "") << to_string(s) << " on " << w << "x" << h;
        }
      }
    }
}

TEST(Schedule, StridedOrderMatchesDefinition) {
  // 3x3 grid, groups of 2 blocks, stride 2: groups 0,2,4 then 1,3 -> blocks 0,1,4,5,8,2,3,6,7.
  const Grid g{3, 3};
  const std::vector<std::uint32_t> want = {0, 1, 4, 5, 8, 2, 3, 6, 7};
  for (std::uint32_t p = 0; p < 9; ++p) {
    const Block b = Schedule::strided(2, 2).at(p, g);
    EXPECT_EQ(b.y * 3 + b.x, want[p]) << p;
  }
  // S = W, G = 1 is column-major.
  const Grid g2{5, 4};
  for (std::uint32_t p = 0; p < 20; ++p) EXPECT_EQ(Schedule::strided(5, 1).at(p, g2), (Block{p / 4, p % 4}));
  // S = 1 is sequential whatever G.
  for (std::uint32_t p = 0; p < 20; ++p) EXPECT_EQ(Schedule::strided(1, 3).at(p, g2), Schedule::sequential().at(p, g2));
}

TEST(Schedule, ZigzagAndTiledOrders) {
  const Grid g{4, 3};
  const std::vector<Block> zz = order(Schedule::zigzag(), g);
  EXPECT_EQ(zz[3], (Block{3, 0}));
  EXPECT_EQ(zz[4], (Block{3, 1}));
  EXPECT_EQ(zz[7], (Block{0, 1}));
  EXPECT_EQ(zz[8], (Block{0, 2}));
  // 5x3 grid in 2x2 tiles: tile row 0 = tiles of 2x2, 2x2, 1x2; tile row 1 = 2x1, 2x1, 1x1.
  const auto t = order(Schedule::tiled(2, 2), Grid{5, 3});
  const std::vector<Block> want = {{0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 0}, {3, 0}, {2, 1}, {3, 1},
                                   {4, 0}, {4, 1}, {0, 2}, {1, 2}, {2, 2}, {3, 2}, {4, 2}};
  EXPECT_EQ(t, want);
  // A 1x1 tile and a full-grid tile are both sequential.
  for (std::uint32_t p = 0; p < 15; ++p) {
    EXPECT_EQ(Schedule::tiled(1, 1).at(p, Grid{5, 3}), Schedule::sequential().at(p, Grid{5, 3}));
    EXPECT_EQ(Schedule::tiled(5, 3).at(p, Grid{5, 3}), Schedule::sequential().at(p, Grid{5, 3}));
  }
}

TEST(Schedule, TiledStripIsCutlassSwizzle) {
  // CUTLASS GemmIdentityThreadblockSwizzle<K>: launched block (bx, by) of a (H*K) x ceil(W/K) grid
  // works on tile m = bx >> log2(K), n = (by << log2(K)) + (bx & (K-1)). Our tiled:Kx<H> with the
  // row-major launch position p = by * (H*K) + bx is the same map with (x, y) = (n, m).
  for (std::uint32_t K : {1u, 2u, 4u, 8u})
    for (std::uint32_t H : {1u, 3u, 8u}) {
      const Grid g{K * 5, H};
      const Schedule s = Schedule::tiled(K, H);
      for (std::uint32_t p = 0; p < g.count(); ++p) {
        const std::uint32_t bx = p % (H * K), by = p / (H * K);
        const std::uint32_t m = bx / K, n = by * K + (bx & (K - 1));
        ASSERT_EQ(s.at(p, g), (Block{n, m})) << K << " " << H << " " << p;
      }
    }
}

TEST(Schedule, HilbertMatchesRecursiveGilbert) {
  for (std::uint32_t w = 1; w <= 40; ++w)
    for (std::uint32_t h = 1; h <= 40; ++h) {
      const Grid g{w, h};
      const auto ref = gilbert(g);
      ASSERT_EQ(ref.size(), g.count());
      for (std::uint64_t p = 0; p < g.count(); ++p)
        ASSERT_EQ(Schedule::hilbert().at(p, g), ref[p]) << w << "x" << h << " p=" << p;
    }
  for (Grid g : {Grid{100, 37}, Grid{512, 512}, Grid{33, 250}}) {
    const auto ref = gilbert(g);
    for (std::uint64_t p = 0; p < g.count(); ++p) ASSERT_EQ(Schedule::hilbert().at(p, g), ref[p]) << p;
  }
}

TEST(Schedule, HilbertIsLocal) {
  // Consecutive blocks are neighbours (at most one diagonal step); on power-of-two squares and on
  // even-sided grids every step is to an edge neighbour.
  for (std::uint32_t w = 1; w <= 24; ++w)
    for (std::uint32_t h = 1; h <= 24; ++h) {
      const Grid g{w, h};
      int diagonal = 0;
      for (std::uint64_t p = 1; p < g.count(); ++p) {
        const Block a = Schedule::hilbert().at(p - 1, g), b = Schedule::hilbert().at(p, g);
        const int dx = std::abs(int(a.x) - int(b.x)), dy = std::abs(int(a.y) - int(b.y));
        ASSERT_LE(std::max(dx, dy), 1) << w << "x" << h << " p=" << p;
        ASSERT_GE(dx + dy, 1);
        diagonal += dx + dy == 2;
      }
      if (w % 2 == 0 && h % 2 == 0) {
        EXPECT_EQ(diagonal, 0) << w << "x" << h;
      }
      EXPECT_LE(diagonal, 1) << w << "x" << h;
    }
}

TEST(Schedule, SampledBijectionOnLargeGrids) {
  // Large grids: the rank array catches any duplicate over the whole grid for grids up to a few
  // million blocks; beyond that, sampled positions must stay inside the grid and be distinct.
  for (Grid g : {Grid{512, 512}, Grid{300, 299}, Grid{4096, 7}, Grid{3, 5000}}) {
    for (const Schedule& s : candidates(g, true)) {
      ASSERT_NO_THROW(ranks(s, g)) << to_string(s);
    }
    for (Schedule s : {Schedule::strided(97, 13), Schedule::tiled(31, 17), Schedule::tiled(g.w, 1)}) {
      if (fits(s, g)) {
        ASSERT_NO_THROW(ranks(s, g)) << to_string(s);
      }
    }
  }
  std::mt19937_64 rng(42);
  const Grid huge{65536, 65535};
  for (Schedule s : {Schedule::sequential(), Schedule::zigzag(), Schedule::hilbert(), Schedule::tiled(7, 9),
                     Schedule::strided(65536, 1), Schedule::strided(1000, 33)}) {
    std::set<std::pair<std::uint32_t, std::uint32_t>> seen;
    for (int i = 0; i < 20000; ++i) {
      const std::uint64_t p = rng() % huge.count();
      const Block b = s.at(p, huge);
      ASSERT_LT(b.x, huge.w);
      ASSERT_LT(b.y, huge.h);
      seen.insert({b.x, b.y});
    }
    // Distinct positions give distinct blocks (a collision of random positions is ~ 20000^2/2^33).
    EXPECT_GE(seen.size(), 19990u) << to_string(s);
    // The ends: first and last positions.
    EXPECT_NO_THROW(s.at(0, huge));
    EXPECT_NO_THROW(s.at(huge.count() - 1, huge));
  }
}

TEST(Schedule, ParseAndPrint) {
  for (const char* t : {"sequential", "zigzag", "hilbert", "strided:4:2", "tiled:8x4"})
    EXPECT_EQ(to_string(parse_schedule(t)), t);
  EXPECT_EQ(parse_schedule("tiled:3x5"), Schedule::tiled(3, 5));
  EXPECT_EQ(parse_schedule("strided:7:1"), Schedule::strided(7, 1));
  for (const char* bad : {"",
                          "morton",
                          "Sequential",
                          "sequential:2",
                          "strided",
                          "strided:4",
                          "strided:0:1",
                          "strided:1:0",
                          "strided:a:1",
                          "strided:-1:2",
                          "strided:1:2:3",
                          "tiled",
                          "tiled:8",
                          "tiled:0x4",
                          "tiled:4x",
                          "tiled:x4",
                          "tiled:4x4x4",
                          "tiled:8X4",
                          "hilbert:1",
                          "strided:99999999999:1",
                          "zigzag:"})
    EXPECT_THROW(parse_schedule(bad), UsageError) << bad;
  try {
    parse_schedule("morton");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("morton"), std::string::npos);
  }
}

TEST(Schedule, ParametersThatDoNotFitTheGrid) {
  EXPECT_THROW(validate(Schedule::tiled(9, 2), Grid{8, 8}), UsageError);
  EXPECT_THROW(validate(Schedule::tiled(2, 9), Grid{8, 8}), UsageError);
  EXPECT_NO_THROW(validate(Schedule::tiled(8, 8), Grid{8, 8}));
  EXPECT_THROW(validate(Schedule::strided(5, 1), Grid{2, 2}), UsageError);  // 4 groups, stride 5
  EXPECT_THROW(validate(Schedule::strided(1, 5), Grid{2, 2}), UsageError);  // group larger than grid
  EXPECT_THROW(validate(Schedule::strided(3, 2), Grid{2, 2}), UsageError);  // 2 groups, stride 3
  EXPECT_NO_THROW(validate(Schedule::strided(2, 2), Grid{2, 2}));
  EXPECT_THROW(validate(Schedule::sequential(), Grid{0, 4}), UsageError);
  EXPECT_THROW(order(Schedule::hilbert(), Grid{4, 0}), UsageError);
  EXPECT_THROW(parse_grid("0x3"), UsageError);
  EXPECT_THROW(parse_grid("3"), UsageError);
  EXPECT_THROW(parse_grid("100000x100000"), UsageError);
  EXPECT_EQ(parse_grid("16x9"), (Grid{16, 9}));
}

TEST(Schedule, DrawAndJson) {
  EXPECT_EQ(draw(Schedule::zigzag(), Grid{3, 2}), "0 1 2\n5 4 3\n");
  EXPECT_EQ(draw(Schedule::sequential(), Grid{1, 1}), "0\n");
  EXPECT_EQ(order_json(Schedule::strided(2, 1), Grid{2, 2}), "[[0, 0], [0, 1], [1, 0], [1, 1]]");
  EXPECT_EQ(draw(Schedule::hilbert(), Grid{2, 2}), "0 3\n1 2\n");
  EXPECT_THROW(draw(Schedule::sequential(), Grid{1000, 1000}), UsageError);
}

TEST(Schedule, CandidatesFitAndRefinementsDiffer) {
  for (Grid g : {Grid{1, 1}, Grid{1, 7}, Grid{3, 2}, Grid{512, 512}, Grid{16, 512}, Grid{512, 5}}) {
    for (bool ex : {false, true}) {
      const auto c = candidates(g, ex);
      ASSERT_FALSE(c.empty());
      EXPECT_EQ(c.front(), Schedule::sequential());
      for (std::size_t i = 0; i < c.size(); ++i) {
        EXPECT_TRUE(fits(c[i], g)) << to_string(c[i]);
        for (std::size_t j = 0; j < i; ++j) EXPECT_FALSE(c[i] == c[j]);
        for (const auto& r : refinements(c[i], g)) {
          EXPECT_TRUE(fits(r, g));
          EXPECT_FALSE(r == c[i]);
        }
      }
    }
  }
  EXPECT_EQ(candidates(Grid{512, 512}).size(), 6u);  // sequential, zigzag, 4x4, 16x16, column-major, hilbert
  EXPECT_EQ(candidates(Grid{512, 512}, true).size(), 17u);
}
