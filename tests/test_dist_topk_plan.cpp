// The pure part of the distributed top-k over lists held by different ranks (src/dist/topk_plan.hpp):
// TPUT's phase-2 threshold, the coordinator's bounds, pruning and the exact scores. No MPI needed.
#include <gtest/gtest.h>

#include "dist/topk_plan.hpp"
#include "topk/internal.hpp"

namespace tandem::dist::topk_plan {
namespace {

TEST(DistTopkPlan, ThresholdLeavesUnsentObjectsStrictlyBelowTau) {
  for (int above = -20; above <= 40; ++above)
    for (std::uint32_t active = 1; active <= 6; ++active) {
      SCOPED_TRACE(testing::Message() << "above " << above << " active " << active);
      const Fixed low_sum = 1000;
      const Fixed t = phase2_threshold(low_sum + above, low_sum, active);
      if (above <= 0) {
        EXPECT_LE(t, 0);  // every entry is at least its list's low: all are sent
        continue;
      }
      // An object left out everywhere adds at most T - 1 per active list: below tau.
      EXPECT_LT(Fixed(active) * (t - 1), Fixed(above));
      // And T is the largest such threshold: T + 1 could let an object reach tau unsent.
      EXPECT_GE(Fixed(active) * t, Fixed(above));
    }
}

TEST(DistTopkPlan, BoundsCountUnseenListsAtTheirLowAndCap) {
  const std::vector<ListBound> lists{{0, 10}, {-5, 5}, {3, 3}};  // the last list has one score for all
  Candidates c(lists);
  EXPECT_EQ(c.active_lists(), 2u);
  EXPECT_EQ(c.low_sum(), -2);
  c.add(0, 7, 8);
  c.add(1, 9, 4);
  c.add(0, 9, 2);
  c.add(0, 9, 2);  // the same pair again (looked up, then sent): once
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.lower(7), 8 + -5 + 3);
  EXPECT_EQ(c.upper(7), 8 + 5 + 3);
  EXPECT_EQ(c.lower(9), 2 + 4 + 3);
  EXPECT_EQ(c.upper(9), 2 + 4 + 3);  // every list that varies seen: exact
  EXPECT_EQ(c.missing(7), 0b010u);   // list 2 never asked: its one score is known
  EXPECT_EQ(c.missing(9), 0u);
  c.set_cap(1, -1);  // list 1 sent down to a score worth -1
  EXPECT_EQ(c.upper(7), 8 + -1 + 3);
  EXPECT_EQ(c.kth_lower(1), 9);
  EXPECT_EQ(c.kth_lower(2), 6);
}

TEST(DistTopkPlan, SurvivorsKeepAnUpperBoundEqualToTau) {
  const std::vector<ListBound> lists{{0, 4}, {0, 4}};
  Candidates c(lists);
  c.add(0, 1, 4);
  c.add(1, 1, 4);  // exact 8
  c.add(0, 2, 3);  // [3, 7]
  c.add(0, 3, 2);  // [2, 6]
  c.add(1, 4, 1);  // [1, 5]
  // Both lists sent down to 2: now 2: [3, 5], 3: [2, 4], 4: [1, 3].
  c.set_cap(0, 2);
  c.set_cap(1, 2);
  EXPECT_EQ(c.survivors(4), (std::vector<std::uint32_t>{1, 2, 3}));  // 3 may tie at 4 and win by its id
  EXPECT_EQ(c.survivors(5), (std::vector<std::uint32_t>{1, 2}));
}

TEST(DistTopkPlan, FixedSumsGiveTheSingleProcessScores) {
  topk::GenOptions g;
  g.objects = 300;
  g.lists = 3;
  const topk::Lists l = topk::generate(g);
  for (const char* text : {"sum", "wsum:0.1,3,0.7"}) {
    const auto agg = topk::Aggregate::parse(text, 3);
    const auto spec = topk::detail::spec_of(agg, l);
    std::vector<Fixed> sum(l.m, 0);
    for (std::uint32_t i = 0; i < l.n; ++i)
      for (const auto& e : l.list(i)) sum[e.id] += contribution(spec, i, e.score);
    std::vector<topk::Item> items;
    for (std::uint32_t id = 0; id < l.m; ++id) items.push_back({id, score_of(spec, sum[id])});
    EXPECT_EQ(best_k(items, 25), topk::reference(l, 25, agg)) << text;
  }
  EXPECT_EQ(to_int(to_acc(-(Fixed(1) << 100) - 3)), -(Fixed(1) << 100) - 3);
}

}  // namespace
}  // namespace tandem::dist::topk_plan
