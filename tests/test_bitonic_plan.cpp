// The hybrid bitonic plan: the worked example's step tables, the short-run rule, the
// JSON, the cost model and multi-device planning.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "sort/bitonic/plan_edits.hpp"
#include "tandem/core/error.hpp"
#include "tandem/sort/bitonic_plan.hpp"

using namespace tandem;
using namespace tandem::bitonic;

namespace {
std::set<int> concurrent(const Plan& p) {
  std::set<int> s;
  for (const auto& st : p.steps)
    if (st.mode == kConcurrent) s.insert(st.step);
  return s;
}
std::set<int> range(int a, int b, std::set<int> s = {}) {
  for (int i = a; i <= b; ++i) s.insert(i);
  return s;
}
}  // namespace

TEST(SortPlan, StepNumbering) {
  // Subset p holds steps (p-1)p/2+1 .. (p-1)p/2+p; step j of subset p has stride 2^(p-j).
  EXPECT_EQ(step_count(4), 10);
  EXPECT_EQ(net_step(1).subset, 1);
  EXPECT_EQ(net_step(1).stride, 1u);
  EXPECT_EQ(net_step(2).subset, 2);
  EXPECT_EQ(net_step(2).stride, 2u);
  EXPECT_EQ(net_step(3).stride, 1u);
  EXPECT_EQ(net_step(7).subset, 4);
  EXPECT_EQ(net_step(7).stride, 8u);
  EXPECT_EQ(net_step(10).stride, 1u);
  EXPECT_EQ(net_step(406).subset, 28);
  EXPECT_EQ(net_step(406).stride, 1u);
  EXPECT_THROW(net_step(0), UsageError);
  EXPECT_EQ(ceil_log2(0), 0);
  EXPECT_EQ(ceil_log2(1), 0);
  EXPECT_EQ(ceil_log2(16), 4);
  EXPECT_EQ(ceil_log2(17), 5);
}

TEST(SortPlan, WorkedExamplePolicyC) {
  const Plan p = make_plan(16, 0.6, 'c');
  EXPECT_EQ(p.N, 1);
  EXPECT_EQ(p.share("cpu"), 8u);
  EXPECT_EQ(p.share("gpu"), 8u);
  EXPECT_EQ(concurrent(p), range(1, 6, range(8, 10)));
  EXPECT_EQ(p.steps[6].mode, 1);  // step 7 on the GPU
  EXPECT_EQ(p.mode_name(p.steps[6].mode), "gpu");
  EXPECT_EQ(p.concurrent_ranges(), "1-6, 8-10");
  // The short-run rule changes nothing here: 1-6 and 8-10 touch the ends.
  EXPECT_EQ(concurrent(make_plan(16, 0.6, 'c', 3)), range(1, 6, range(8, 10)));
}

TEST(SortPlan, WorkedExamplePolicyB) {
  const Plan p = make_plan(16, 0.6, 'b');
  EXPECT_EQ(p.share("cpu"), 4u);
  EXPECT_EQ(p.share("gpu"), 12u);
  EXPECT_EQ(concurrent(p), range(1, 3, range(5, 6, range(9, 10))));
  const Plan r = make_plan(16, 0.6, 'b', 3);
  EXPECT_EQ(concurrent(r), range(1, 3, range(9, 10)));
  EXPECT_EQ(r.concurrent_ranges(), "1-3, 9-10");
}

TEST(SortPlan, WorkedExamplePolicyA) {
  const Plan p = make_plan(16, 0.6, 'a');
  EXPECT_EQ(p.share("cpu"), 6u);
  EXPECT_EQ(p.share("gpu"), 10u);
  EXPECT_EQ(concurrent(p), (std::set<int>{1, 3, 6, 10}));
  EXPECT_EQ(concurrent(make_plan(16, 0.6, 'a', 3)), (std::set<int>{1, 10}));
  // A rule of 1 keeps everything; 2 already drops the single interior steps.
  EXPECT_EQ(concurrent(make_plan(16, 0.6, 'a', 1)), (std::set<int>{1, 3, 6, 10}));
  EXPECT_EQ(concurrent(make_plan(16, 0.6, 'a', 2)), (std::set<int>{1, 10}));
}

// Independence from the comparators themselves: a step is independent exactly when none of its
// compare-exchanges (i, i ^ stride) has one element on each side of the CPU/GPU split. This is why
// policy a (6 of 16 on the CPU) also runs step 3 concurrently, which the document's table [0074] omits.
TEST(SortPlan, IndependenceMeansNoComparatorCrossesTheSplit) {
  for (char policy : {'a', 'b', 'c'})
    for (double k : {0.1, 0.3, 0.6, 0.9})
      for (int n = 2; n <= 10; ++n) {
        const Plan p = make_plan(std::uint64_t{1} << n, k, policy);
        const std::uint64_t split = p.share("cpu");
        for (const PlanStep& s : p.steps) {
          bool crosses = false;
          for (std::uint64_t i = 0; i < p.padded(); ++i) crosses |= (i < split) != ((i ^ s.stride) < split);
          EXPECT_EQ(s.independent, !crosses) << "policy " << policy << " k " << k << " n " << n << " step " << s.step;
        }
      }
  const Plan a = make_plan(16, 0.6, 'a');
  EXPECT_EQ(a.steps[2].stride, 1u);  // step 3: pairs (0,1), (2,3), ...: the split at 6 falls between pairs
  EXPECT_TRUE(a.steps[2].independent);
  EXPECT_FALSE(a.steps[1].independent);  // step 2, stride 2: the pair (5, 7) crosses it
}

TEST(SortPlan, IndependenceMatchesTheClosedFormForPolicyC) {
  // With 2^(n-N) on the CPU, steps 1..(n-N+1)(n-N)/2 and, in subset q > n-N, its last
  // n-N steps are independent; the rest dependent.
  for (int n = 1; n <= 12; ++n)
    for (double k : {0.01, 0.1, 0.3, 0.6, 0.9, 1.0}) {
      const Plan p = make_plan(std::uint64_t{1} << n, k, 'c');
      const int N = p.N;
      const int m = std::max(0, n - N);
      for (const auto& s : p.steps) {
        bool want = s.step <= (m + 1) * m / 2;
        for (int q = m + 1; q <= n; ++q)
          if (s.step >= (q + 1) * q / 2 - m + 1 && s.step <= (q + 1) * q / 2) want = true;
        if (p.share("cpu") == 0) want = true;  // nothing split
        EXPECT_EQ(s.independent, want) << "n=" << n << " k=" << k << " step " << s.step;
      }
    }
}

TEST(SortPlan, AllocationN) {
  // 1/2^(N+1) <= k/(k+1) < 1/2^N
  for (double k : {0.001, 0.01, 0.05, 0.2, 0.3333, 0.6, 0.99}) {
    const Plan p = make_plan(1 << 20, k, 'c');
    const double f = k / (k + 1);
    EXPECT_LE(std::ldexp(1.0, -(p.N + 1)), f) << k;
    EXPECT_LT(f, std::ldexp(1.0, -p.N)) << k;
    EXPECT_EQ(p.share("cpu"), (std::uint64_t{1} << 20) >> p.N);
    EXPECT_EQ(make_plan(1 << 20, k, 'b').share("cpu"), (std::uint64_t{1} << 20) >> (p.N + 1));
  }
  EXPECT_EQ(make_plan(1 << 10, 1.0, 'c').share("cpu"), 512u);  // equal devices: N clamped to 1
}

TEST(SortPlan, EdgeCases) {
  // k = 0: all on the GPU; k = inf: all on the CPU; CPU faster: the GPU gets the small share.
  const Plan g = make_plan(1000, 0.0, 'c');
  EXPECT_EQ(g.padded(), 1024u);
  EXPECT_EQ(g.share("cpu"), 0u);
  EXPECT_EQ(g.concurrent_steps(), 0);
  for (const auto& s : g.steps) EXPECT_EQ(g.mode_name(s.mode), "gpu");
  const Plan c = make_plan(1000, std::numeric_limits<double>::infinity(), 'a');
  for (const auto& s : c.steps) EXPECT_EQ(c.mode_name(s.mode), "cpu");
  const Plan f = make_plan(1 << 12, 4.0, 'c');  // GPU is the weaker device: r = 0.25, N = 2
  EXPECT_EQ(f.N, 2);
  EXPECT_EQ(f.share("gpu"), 1024u);
  EXPECT_EQ(f.share("cpu"), 3072u);
  EXPECT_EQ(f.mode_name(f.gather), "cpu");
  // Tiny sizes: no steps for 0 or 1 elements, one for 2.
  EXPECT_TRUE(make_plan(0, 0.6, 'c').steps.empty());
  EXPECT_TRUE(make_plan(1, 0.6, 'c').steps.empty());
  EXPECT_EQ(make_plan(2, 0.6, 'c').steps.size(), 1u);
  EXPECT_THROW(make_plan(16, 0.6, 'd'), UsageError);
  EXPECT_THROW(make_plan(16, std::nan(""), 'a'), UsageError);
}

TEST(SortPlan, Json) {
  const auto j = to_json(make_plan(16, 0.6, 'c'));
  EXPECT_EQ(j["n"], 16);
  EXPECT_EQ(j["N"], 1);
  EXPECT_EQ(j["policy"], "c");
  EXPECT_EQ(j["cpu_elements"], 8);
  EXPECT_EQ(j["gpu_elements"], 8);
  EXPECT_DOUBLE_EQ(j["k"].get<double>(), 0.6);
  ASSERT_EQ(j["steps"].size(), 10u);
  EXPECT_EQ(j["steps"][0]["step"], 1);
  EXPECT_EQ(j["steps"][0]["subset"], 1);
  EXPECT_EQ(j["steps"][0]["stride"], 1);
  EXPECT_EQ(j["steps"][0]["mode"], "concurrent");
  EXPECT_EQ(j["steps"][6]["stride"], 8);
  EXPECT_EQ(j["steps"][6]["mode"], "gpu");
  EXPECT_NE(describe(make_plan(16, 0.6, 'c')).find("1-6, 8-10"), std::string::npos);
}

TEST(SortPlan, CostModelGathersWhenTransfersDominate) {
  CostModel c;
  c.step_seconds = {1e-9 / 0.6, 1e-9};  // CPU per element-step, GPU per element-step: k = 0.6
  c.element_bytes = 4;
  // A free link: every concurrent run pays.
  c.h2d_bytes_per_s = c.d2h_bytes_per_s = 0;
  Plan free_link = make_plan(1 << 20, 0.6, 'b', -1, c);
  EXPECT_EQ(free_link.decided_by, "cost model");
  EXPECT_EQ(concurrent(free_link), concurrent(make_plan(1 << 20, 0.6, 'b')));
  // A slow link: interior runs gather (the first run, which needs no extra copies, stays).
  c.h2d_bytes_per_s = c.d2h_bytes_per_s = 1e8;
  Plan slow = make_plan(1 << 20, 0.6, 'b', -1, c);
  EXPECT_LT(slow.concurrent_steps(), free_link.concurrent_steps());
  EXPECT_LE(predict(slow, c).total, predict(make_plan(1 << 20, 0.6, 'b'), c).total + 1e-12);
  // min_interior_run overrides the model.
  Plan rule = make_plan(1 << 20, 0.6, 'b', 3, c);
  EXPECT_EQ(rule.decided_by, "min_interior_run");
}

TEST(SortPlan, CostModelDeclinesCoExecutionWhenTheCpuIsFarSlower) {
  CostModel c;
  c.step_seconds = {1e-9 / 0.005, 1e-9};  // k = 0.005 (an H200 against a CPU)
  c.h2d_bytes_per_s = c.d2h_bytes_per_s = 5e10;
  c.element_bytes = 4;
  Plan p = make_plan(1 << 24, 0.005, 'c', -1, c);
  EXPECT_EQ(p.concurrent_steps(), 0);
  EXPECT_EQ(p.share("cpu"), 0u);
  EXPECT_EQ(p.mode_name(p.gather), "gpu");
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes.back().find("does not pay"), std::string::npos);
}

TEST(SortPlan, PredictCountsComputeAndTransfers) {
  CostModel c;
  c.step_seconds = {2.0, 1.0};
  c.h2d_bytes_per_s = c.d2h_bytes_per_s = 4.0;  // one element per second
  c.element_bytes = 4;
  const Plan p = make_plan(16, 0.6, 'c');  // 8 + 8: concurrent 1-6, gpu 7, concurrent 8-10
  const PlanCost pc = predict(p, c);
  // Compute: 6 steps * max(8*2, 8*1) + 1 * 16*1 + 3 * 16 = 96 + 16 + 48 = 160.
  EXPECT_DOUBLE_EQ(pc.compute, 160.0);
  // Transfers: 8 up at the start, 8 up to gather, 8 down to split, 8 down at the end.
  EXPECT_DOUBLE_EQ(pc.transfer, 32.0);
  ASSERT_EQ(pc.run_seconds.size(), 3u);
  EXPECT_DOUBLE_EQ(pc.run_seconds[0], 8 + 96.0);
  EXPECT_DOUBLE_EQ(pc.run_seconds[1], 8 + 16.0);
  EXPECT_DOUBLE_EQ(pc.run_seconds[2], 8 + 48.0 + 8);
  CostModel bad = c;
  bad.step_seconds = {1.0};
  EXPECT_THROW(predict(p, bad), UsageError);
}

TEST(SortPlan, PredictWithEntriesSharingAGpu) {
  // CPU + two entries on one GPU: concurrent, each entry runs at half the GPU's speed; gathered,
  // the entry has the GPU alone. Copies between the entries use the same-GPU rate.
  const Plan p = make_multi_plan(16, {{"cpu", 0, 0, 0}, {"gpu0", 1, 0, 0}, {"gpu1", 1, 0, 0}}, 'c');
  ASSERT_EQ(p.devices[2].count, 8u);  // gpu1 [0, 8), gpu0 [8, 16): concurrent 1-6, 8-10; 7 on gpu0
  CostModel c;
  c.step_seconds = {1e30, 2.0, 2.0};
  c.alone_step_seconds = {1e30, 1.0, 1.0};
  c.gpu_of = {-1, 0, 0};
  c.h2d_bytes_per_s = c.d2h_bytes_per_s = 4.0;  // one element per second
  c.same_gpu_bytes_per_s = 8.0;                 // two elements per second
  c.element_bytes = 4;
  const PlanCost pc = predict(p, c);
  // Compute: 9 concurrent steps * 8 * 2 + 1 gathered step * 16 * 1 = 144 + 16.
  EXPECT_DOUBLE_EQ(pc.compute, 160.0);
  // Transfers: 8 + 8 up, gather 8 (gpu1 -> gpu0) at 2/s, split 8 back at 2/s, 8 + 8 down.
  EXPECT_DOUBLE_EQ(pc.transfer, 16 + 4 + 4 + 16.0);
  c.gpu_of = {-1, 0, 1};  // two GPUs: a peer link at 4 elements per second
  c.peer_bytes_per_s = 16.0;
  EXPECT_DOUBLE_EQ(predict(p, c).transfer, 16 + 2 + 2 + 16.0);
  c.peer_bytes_per_s = 0;  // no peer access: about one host link
  EXPECT_DOUBLE_EQ(predict(p, c).transfer, 16 + 8 + 8 + 16.0);
}

TEST(SortPlan, MultiDevice) {
  // CPU + two GPUs, GPU1 the fastest: the weaker devices get power-of-two shares (policy c),
  // laid out larger first; a step is independent only if every split point allows it.
  std::vector<DeviceShare> d{{"cpu", 1.0, 0, 0}, {"gpu0", 3.0, 0, 0}, {"gpu1", 4.0, 0, 0}};
  const Plan p = make_multi_plan(1 << 10, d, 'c');
  EXPECT_EQ(p.mode_name(p.gather), "gpu1");
  // cpu: 1/8 -> c rounds up to 1/4 (256); gpu0: 3/8 -> 1/2 (512); gpu1 gets the rest (256).
  EXPECT_EQ(p.share("cpu"), 256u);
  EXPECT_EQ(p.share("gpu0"), 512u);
  EXPECT_EQ(p.share("gpu1"), 256u);
  std::uint64_t total = 0;
  for (const auto& s : p.devices) total += s.count;
  EXPECT_EQ(total, 1024u);
  EXPECT_EQ(p.devices[1].offset, 0u);    // gpu0 first (largest weaker share)
  EXPECT_EQ(p.devices[0].offset, 512u);  // then the CPU
  EXPECT_EQ(p.devices[2].offset, 768u);  // the gathering device last
  for (const auto& s : p.steps) {
    const bool want = 512 % (2 * s.stride) == 0 && 768 % (2 * s.stride) == 0;
    EXPECT_EQ(s.independent, want) << s.step;
    EXPECT_EQ(s.mode == kConcurrent, want) << s.step;
    if (!want) {
      EXPECT_EQ(p.mode_name(s.mode), "gpu1");
    }
  }
  // Shares never exceed the array even when every share rounds up.
  std::vector<DeviceShare> many{{"cpu", 1, 0, 0}, {"gpu0", 1, 0, 0}, {"gpu1", 1, 0, 0}, {"gpu2", 1.01, 0, 0}};
  for (char pol : {'a', 'b', 'c'}) {
    const Plan q = make_multi_plan(1000, many, pol);
    std::uint64_t sum = 0;
    for (const auto& s : q.devices) sum += s.count;
    EXPECT_EQ(sum, 1024u) << pol;
  }
  // Two devices through the multi planner give the two-device tables.
  std::vector<DeviceShare> two{{"cpu", 0.6, 0, 0}, {"gpu", 1.0, 0, 0}};
  EXPECT_EQ(concurrent(make_multi_plan(16, two, 'c')), range(1, 6, range(8, 10)));
  EXPECT_EQ(concurrent(make_multi_plan(16, two, 'b', 3)), range(1, 3, range(9, 10)));
  EXPECT_EQ(concurrent(make_multi_plan(16, two, 'a')), (std::set<int>{1, 3, 6, 10}));
  EXPECT_THROW(make_multi_plan(16, {}, 'c'), UsageError);
  // The cost model works on multi-device plans too.
  CostModel c;
  c.step_seconds = {8e-9, 3e-9, 2e-9};
  c.h2d_bytes_per_s = c.d2h_bytes_per_s = 1e10;
  Plan o = p;
  optimise(o, c);
  EXPECT_LE(predict(o, c).total, predict(p, c).total + 1e-15);
}
