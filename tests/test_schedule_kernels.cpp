// The benchmark kernels' CPU side: footprints partition the output, references are right on small
// cases, the static selector prefers sharing, the controller's plan respects its budget.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tandem/error.hpp"
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
  // 512x512 grid, 10%: 51 rows; chunks of >= 2112 blocks = 5 rows -> 10 chunks.
  auto p = plan_profile(Grid{512, 512}, o, 2112);
  ASSERT_FALSE(p.candidates.empty());
  EXPECT_GE(p.chunk_rows, 5u);
  EXPECT_LE((p.candidates.size() + p.refine_chunks) * p.chunk_rows, 51u);
  EXPECT_EQ(p.candidates.front(), Schedule::sequential());
  for (const auto& s : p.candidates) EXPECT_TRUE(fits(s, Grid{512, p.chunk_rows}));
  // Too small to profile: 32x32 grid, 3 rows of budget, chunks of 2112 blocks.
  auto q = plan_profile(Grid{32, 32}, o, 2112);
  EXPECT_TRUE(q.candidates.empty());
  EXPECT_FALSE(q.why_not.empty());
  // A larger fraction admits more candidates.
  o.profile_fraction = 0.3;
  auto r = plan_profile(Grid{512, 512}, o, 2112);
  EXPECT_GE(r.candidates.size(), p.candidates.size());
  o.profile_fraction = 0;
  EXPECT_THROW(plan_profile(Grid{512, 512}, o, 2112), UsageError);
  o.profile_fraction = 1.5;
  EXPECT_THROW(plan_profile(Grid{512, 512}, o, 2112), UsageError);
}

#if !TANDEM_HAS_CUDA
TEST(ScheduleKernels, RunningNeedsAGpu) {
  EXPECT_THROW(KernelRunner(kernel_spec("matmul"), 256), NoDeviceError);
  EXPECT_THROW(KernelRunner(kernel_spec("matmul"), 100), UsageError);
}
#endif
