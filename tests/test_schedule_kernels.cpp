// The benchmark kernels' CPU side: footprints partition the output, references are right on small
// cases, the static selector prefers sharing, the controller's plan respects its budget.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "schedule/profile_plan.hpp"
#include "tandem/core/error.hpp"
#include "tandem/schedule/kernels.hpp"

using namespace tandem;
using namespace tandem::schedule;

TEST(ScheduleKernels, NamesAndSizes) {
  EXPECT_EQ(kernel_specs().size(), 6u);
  EXPECT_THROW(kernel_spec("gemm"), UsageError);
  EXPECT_EQ(kernel_spec("matmul").inputs, 2);
  EXPECT_THROW(check_size(0), UsageError);
  EXPECT_THROW(check_size(1000), UsageError);
  EXPECT_THROW(check_size(65536 + 256), UsageError);
  EXPECT_NO_THROW(check_size(768));  // not a power of two
  EXPECT_EQ(kernel_spec("intimg-row").grid(768), (Grid{3, 24}));
  EXPECT_EQ(kernel_spec("intimg-col").grid(768), (Grid{24, 3}));
}

TEST(ScheduleKernels, FootprintsStayInsideAndOutputsPartition) {
  for (const auto& k : kernel_specs())
    for (std::uint32_t n : {256u, 768u}) {
      const Grid g = k.grid(n);
      std::vector<int> written(std::size_t(n) * n, 0);
      std::vector<Rect> rects;
      for (std::uint32_t y = 0; y < g.h; ++y)
        for (std::uint32_t x = 0; x < g.w; ++x) {
          rects.clear();
          k.footprint(n, Block{x, y}, rects);
          ASSERT_FALSE(rects.empty());
          for (const Rect& r : rects) {
            ASSERT_LE(r.x1, n);
            ASSERT_LE(r.y1, n);
            ASSERT_LT(r.x0, r.x1);
            ASSERT_LT(r.y0, r.y1);
            if (r.array == 2)
              for (std::uint32_t yy = r.y0; yy < r.y1; ++yy)
                for (std::uint32_t xx = r.x0; xx < r.x1; ++xx) ++written[std::size_t(yy) * n + xx];
          }
        }
      for (int w : written) ASSERT_EQ(w, 1) << k.name << " " << n;
    }
}

TEST(ScheduleKernels, References) {
  const std::uint32_t n = 256;
  const auto a = make_input(n, 3);
  for (float f : a) ASSERT_TRUE(f >= 0 && f < 1);
  EXPECT_NE(make_input(n, 3), make_input(n, 4));
  // Integral images: last column / row are the row / column sums.
  const auto r = reference(kernel_spec("intimg-row"), n, a, {});
  const auto c = reference(kernel_spec("intimg-col"), n, a, {});
  double row0 = 0, col0 = 0;
  for (std::uint32_t i = 0; i < n; ++i) row0 += a[i], col0 += a[std::size_t(i) * n];
  EXPECT_NEAR(r[n - 1], row0, 1e-3);
  EXPECT_NEAR(c[std::size_t(n - 1) * n], col0, 1e-3);
  EXPECT_EQ(r[0], a[0]);
  // Copies are the input.
  EXPECT_EQ(reference(kernel_spec("copy-col"), n, a, {}), a);
  // matmul with the identity gives A back exactly.
  std::vector<float> id(std::size_t(n) * n, 0.0f);
  for (std::uint32_t i = 0; i < n; ++i) id[std::size_t(i) * n + i] = 1.0f;
  EXPECT_EQ(reference(kernel_spec("matmul"), n, a, id), a);
  // Convolution of a constant image is the constant (weights sum to 1, clamped borders).
  const auto w = conv_weights();
  double ws = 0;
  for (float f : w) ws += f;
  EXPECT_NEAR(ws, 1.0, 1e-6);
  const std::vector<float> ones(std::size_t(n) * n, 2.0f);
  for (float f : reference(kernel_spec("conv11"), n, ones, {})) ASSERT_NEAR(f, 2.0f, 1e-5);
  // An impulse spreads as the flipped filter: out[y][x] = w[(5 - (y - y0))...]; check one tap.
  std::vector<float> imp(std::size_t(n) * n, 0.0f);
  imp[100 * n + 100] = 1.0f;
  const auto ci = reference(kernel_spec("conv11"), n, imp, {});
  EXPECT_EQ(ci[(100 - 2) * n + (100 - 3)], w[(2 + 5) * 11 + (3 + 5)]);
  EXPECT_EQ(ci[(100 + 6) * n + 100], 0.0f);
}

TEST(ScheduleKernels, MaxRelError) {
  EXPECT_EQ(max_rel_error({1, 2}, {1, 2}), 0.0);
  EXPECT_NEAR(max_rel_error({1, 2.2f}, {1, 2}), 0.1, 1e-6);
  EXPECT_TRUE(std::isinf(max_rel_error({1}, {1, 2})));
  EXPECT_TRUE(std::isinf(max_rel_error({std::numeric_limits<float>::quiet_NaN()}, {1})));
  EXPECT_EQ(max_rel_error({-0.0f}, {0.0f}), 0.0);
  EXPECT_EQ(max_rel_error({}, {}), 0.0);
}

TEST(ScheduleKernels, StaticSelectorPrefersSharing) {
  // matmul: blocks of one row share A, of one column share B; a compact window (tiles, Hilbert)
  // shares more than a row-major one when the grid is wider than the window.
  const KernelSpec& mm = kernel_spec("matmul");
  const auto c = static_select(mm, 2048, candidates(mm.grid(2048)), 256);
  EXPECT_TRUE(c.best.style == Style::hilbert || c.best.style == Style::tiled) << to_string(c.best);
  double seq = 0, best = 0;
  for (const auto& s : c.scores) {
    if (s.schedule == Schedule::sequential()) seq = s.score;
    best = std::max(best, s.score);
  }
  EXPECT_GT(best, 1.5 * seq);
  // Column-wise integral image: blocks of one column share the carry; column-major order wins.
  const KernelSpec& ic = kernel_spec("intimg-col");
  const auto cc = static_select(ic, 2048, candidates(ic.grid(2048)), 256);
  EXPECT_EQ(cc.best, Schedule::strided(ic.grid(2048).w, 1)) << to_string(cc.best);
  // A window covering the whole grid: every order shares the same; the first candidate is kept.
  const auto whole = static_select(mm, 256, candidates(mm.grid(256)), 1 << 20);
  EXPECT_EQ(whole.best, Schedule::sequential());
  EXPECT_EQ(whole.window, 64u);
  EXPECT_THROW(static_select(mm, 256, {}, 10), UsageError);
  EXPECT_THROW(static_select(mm, 256, {Schedule::tiled(100, 1)}, 10), UsageError);
}

TEST(ScheduleKernels, ProfilePlanRespectsBudget) {
  ControllerOptions o;
  // 512x512 grid, 10%: 26214 blocks; probe + 3 pairs of >= 2112 blocks -> chunks of 3744 blocks,
  // shaped like the (square) grid.
  const Grid g{512, 512};
  auto p = plan_profile(g, o, 2112);
  ASSERT_TRUE(p.why_not.empty()) << p.why_not;
  EXPECT_EQ(p.budget_blocks, 26214u);
  EXPECT_EQ(p.candidates.size(), 4u);
  EXPECT_EQ(p.candidates.front(), Schedule::sequential());
  EXPECT_GE(std::uint64_t(p.piece_w) * p.piece_h, 2112u);
  EXPECT_LE(std::uint64_t(p.piece_w) * p.piece_h * 7, p.budget_blocks + 7u * p.piece_h);
  EXPECT_NEAR(double(p.piece_w) / p.piece_h, 1.0, 0.1);  // square pieces on a square grid
  for (const auto& s : p.candidates) EXPECT_TRUE(fits(rescale(s, g, {p.piece_w, p.piece_h}), {p.piece_w, p.piece_h}));
  // A wide grid gets wide pieces.
  auto wide = plan_profile(Grid{2048, 128}, o, 2112);
  ASSERT_TRUE(wide.why_not.empty());
  EXPECT_GT(wide.piece_w, 8u * wide.piece_h);
  // 256x256 blocks (62 waves): a launch's tail is ~0.8% of the grid's time; the 7 launches of one
  // candidate would cost more than 2%: not profiled, before any launch.
  auto few_waves = plan_profile(Grid{256, 256}, o, 2112);
  EXPECT_NE(few_waves.why_not.find("waves"), std::string::npos) << few_waves.why_not;
  ControllerOptions lax = o;
  lax.max_overhead = 0.1;
  EXPECT_TRUE(plan_profile(Grid{256, 256}, lax, 2112).why_not.empty());
  // Too small to profile: 32x32 grid, 102 blocks of budget, chunks of 2112 blocks.
  auto q = plan_profile(Grid{32, 32}, o, 2112);
  EXPECT_FALSE(q.why_not.empty());
  ASSERT_EQ(q.candidates.size(), 1u);  // the incumbent only
  // The incumbent is the fallback, and with a ranking only its top few and sequential are profiled.
  o.fallback = Schedule::hilbert();
  o.ranking = {Schedule::hilbert(), Schedule::tiled(4, 4),   Schedule::strided(512, 1),
               Schedule::zigzag(),  Schedule::tiled(16, 16), Schedule::sequential()};
  auto ranked = plan_profile(g, o, 2112);
  ASSERT_TRUE(ranked.why_not.empty());
  EXPECT_EQ(ranked.candidates, (std::vector<Schedule>{Schedule::hilbert(), Schedule::sequential(),
                                                      Schedule::tiled(4, 4), Schedule::strided(512, 1)}));
  o.max_candidates = 2;
  EXPECT_EQ(plan_profile(g, o, 2112).candidates, (std::vector<Schedule>{Schedule::hilbert(), Schedule::sequential()}));
  // A fallback that does not fit the grid is ignored.
  o.fallback = Schedule::tiled(1024, 1);
  o.ranking.clear();
  EXPECT_EQ(plan_profile(g, o, 2112).candidates.front(), Schedule::sequential());
  o.profile_fraction = 0;
  EXPECT_THROW(plan_profile(g, o, 2112), UsageError);
  o.profile_fraction = 1.5;
  EXPECT_THROW(plan_profile(g, o, 2112), UsageError);
}

TEST(ScheduleKernels, ChunkSizingStopsWhenChunksCannotBeTrusted) {
  ControllerOptions o;
  const Grid g{512, 512};
  const auto p = plan_profile(g, o, 2112);
  ASSERT_TRUE(p.why_not.empty());
  ControllerOptions free = o;  // launch overhead not limited
  free.max_overhead = 1;
  // A probe of 100 us: chunks keep their width, every candidate fits (probe + 3 pairs <= budget).
  auto a = size_chunks(g, p, 100e-6, free);
  EXPECT_EQ(a.width, p.piece_w);
  EXPECT_EQ(a.candidates, 3u);
  // 15 us: chunks twice as wide, one pair fits what is left of the budget.
  auto b = size_chunks(g, p, 15e-6, free);
  EXPECT_EQ(b.width, 2 * p.piece_w);
  EXPECT_EQ(b.candidates, 1u);
  EXPECT_NEAR(b.estimated_total, 15e-6 * 512 * 512 / (p.piece_w * p.piece_h), 1e-12);
  // With it limited (2% of a ~1 ms grid is ~21 us: fewer than 5 launches of 5 us): stop.
  auto b2 = size_chunks(g, p, 15e-6, o);
  EXPECT_EQ(b2.candidates, 0u);
  EXPECT_NE(b2.why.find("launches"), std::string::npos) << b2.why;
  // A longer grid affords some launches: 1 ms probes (~70 ms grid, 1.4 ms allowed; a launch costs
  // 5 us + half a block lifetime, 147 us; 5 launches besides the pairs): 2 candidates of 3.
  const auto e = size_chunks(g, p, 1e-3, o);
  EXPECT_NEAR(e.launch_cost, 5e-6 + 0.5 * 1e-3 / (p.piece_w * p.piece_h) * 1056, 1e-12);
  EXPECT_EQ(e.candidates, 2u);
  EXPECT_EQ(size_chunks(g, p, 100e-6, o).candidates, 1u);  // ~7 ms grid: one
  // 5 us (a fast copy): a trustworthy chunk would take more than the budget: stop after the probe.
  auto c = size_chunks(g, p, 5e-6, free);
  EXPECT_EQ(c.candidates, 0u);
  EXPECT_NE(c.why.find("budget"), std::string::npos) << c.why;
  // Even a full-width strip is too short: stop.
  auto d = size_chunks(g, p, 1e-9, o);
  EXPECT_EQ(d.candidates, 0u);
  EXPECT_LE(d.width, g.w);
  // Budget holds probe + pairs: never more blocks than the budget.
  for (double t : {1e-6, 10e-6, 20e-6, 29e-6, 31e-6, 1e-3}) {
    const auto s = size_chunks(g, p, t, free);
    EXPECT_LE(std::uint64_t(p.piece_w) * p.piece_h + 2ull * s.candidates * s.width * p.piece_h, p.budget_blocks) << t;
  }
}

TEST(ScheduleKernels, PieceLayoutCoversEveryBlockOnce) {
  for (const Grid g : {Grid{512, 512}, Grid{37, 23}, Grid{5, 40}, Grid{1, 1}, Grid{64, 3}})
    for (std::uint32_t h : {1u, 2u, 3u, 7u, 50u})
      for (const std::vector<std::uint32_t>& widths :
           {std::vector<std::uint32_t>{3, 6, 3, 3}, {1}, {100, 1, 100}, {7, 7, 7, 7, 7, 7, 7, 7, 7, 7}}) {
        PieceLayout L(g, h);
        std::vector<int> seen(g.count(), 0);
        auto mark = [&](const BlockRect& r) {
          ASSERT_LE(std::uint64_t(r.x0) + r.w, g.w);
          ASSERT_LE(std::uint64_t(r.y0) + r.h, g.h);
          for (std::uint32_t y = r.y0; y < r.y0 + r.h; ++y)
            for (std::uint32_t x = r.x0; x < r.x0 + r.w; ++x) ++seen[std::uint64_t(y) * g.w + x];
        };
        for (std::uint32_t w : widths) {
          BlockRect piece;
          std::vector<BlockRect> skipped;
          const bool could = L.can_take(w);
          const bool took = L.take(w, piece, skipped);
          ASSERT_EQ(could, took);
          if (!took) {
            EXPECT_TRUE(skipped.empty());
            continue;
          }
          EXPECT_EQ(piece.w, std::min(w, g.w));
          EXPECT_EQ(piece.h, std::min(h, g.h));
          for (const auto& s : skipped) mark(s);
          mark(piece);
        }
        for (const auto& r : L.rest()) mark(r);
        for (std::size_t i = 0; i < seen.size(); ++i)
          ASSERT_EQ(seen[i], 1) << g.w << "x" << g.h << " h " << h << " block " << i;
      }
}

TEST(ScheduleKernels, RescaleKeepsTheOrderShape) {
  const Grid g{512, 512}, piece{61, 60};
  EXPECT_EQ(rescale(Schedule::strided(512, 1), g, piece), Schedule::strided(61, 1));  // column-major
  EXPECT_EQ(rescale(Schedule::strided(2, 512), g, piece), Schedule::strided(2, 61));
  EXPECT_EQ(rescale(Schedule::strided(64, 8), g, piece), Schedule::strided(7, 8));
  EXPECT_EQ(rescale(Schedule::tiled(8, 512), g, piece), Schedule::tiled(8, 60));  // CUTLASS strips
  EXPECT_EQ(rescale(Schedule::tiled(128, 4), g, piece), Schedule::tiled(61, 4));  // clipped
  EXPECT_EQ(rescale(Schedule::hilbert(), g, piece), Schedule::hilbert());
  EXPECT_EQ(rescale(Schedule::tiled(16, 16), g, g), Schedule::tiled(16, 16));
  // Column-major rescaled to pieces of any size fits them and visits them column by column.
  for (const Grid p : {Grid{61, 60}, Grid{3, 2}, Grid{1, 9}, Grid{100, 1}})
    for (const auto& s : candidates(g, true)) {
      const Schedule r = rescale(s, g, p);
      if (s.style != Style::strided || s.a != g.w) continue;
      ASSERT_TRUE(fits(r, p)) << to_string(s) << " on " << p.w << "x" << p.h;
      const auto ord = order(r, p);
      for (std::uint64_t i = 0; i < ord.size(); ++i)
        ASSERT_EQ(ord[i], (Block{std::uint32_t(i / p.h), std::uint32_t(i % p.h)}));
    }
}

TEST(ScheduleKernels, StaticRankingBestFirst) {
  StaticChoice c;
  c.scores = {{Schedule::sequential(), 1.0},
              {Schedule::zigzag(), 3.0},
              {Schedule::hilbert(), 2.0},
              {Schedule::tiled(4, 4), 3.0}};
  EXPECT_EQ(static_ranking(c), (std::vector<Schedule>{Schedule::zigzag(), Schedule::tiled(4, 4), Schedule::hilbert(),
                                                      Schedule::sequential()}));
  EXPECT_TRUE(static_ranking(StaticChoice{}).empty());
}

#if !TANDEM_HAS_CUDA
TEST(ScheduleKernels, RunningNeedsAGpu) {
  EXPECT_THROW(KernelRunner(kernel_spec("matmul"), 256), NoDeviceError);
  EXPECT_THROW(KernelRunner(kernel_spec("matmul"), 100), UsageError);
}
#endif
