// dist::topk_partitioned and dist::topk_distributed_lists equal topk::reference over the whole data
// on 1 to 4 ranks, and a bad input on one rank is an error on every rank naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dist_helpers.hpp"
#include "tandem/core/error.hpp"

namespace tandem::topk {
// gtest prints items as (id, score) instead of their bytes.
inline void PrintTo(const Item& it, std::ostream* os) {
  *os << "(" << it.id << ", " << fmt::format("{}", it.score) << ")";
}
}  // namespace tandem::topk

namespace tandem::dist::test {
namespace {

topk::Lists generated(std::uint64_t m, std::uint32_t n, topk::Dist d, std::uint64_t seed = 7) {
  topk::GenOptions g;
  g.objects = m;
  g.lists = n;
  g.dist = d;
  g.seed = seed;
  return topk::generate(g);
}

// n lists over m objects with scores from only `levels` values: many ties, across and within lists.
topk::Lists tied(std::uint64_t m, std::uint32_t n, int levels) {
  std::mt19937_64 rng(99);
  topk::Lists l{n, m, {}};
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<topk::Entry> list(m);
    for (std::uint64_t id = 0; id < m; ++id) list[id] = {std::uint32_t(id), float(rng() % unsigned(levels)) / 4.0f};
    std::stable_sort(list.begin(), list.end(), [](auto a, auto b) { return a.score > b.score; });
    l.entries.insert(l.entries.end(), list.begin(), list.end());
  }
  return l;
}

// The objects [begin, begin + count) of every list, renumbered from 0.
topk::Lists objects(const topk::Lists& all, std::uint64_t begin, std::uint64_t count) {
  topk::Lists l{all.n, count, {}};
  for (std::uint32_t i = 0; i < all.n; ++i)
    for (const topk::Entry& e : all.list(i))
      if (e.id >= begin && e.id < begin + count) l.entries.push_back({std::uint32_t(e.id - begin), e.score});
  return l;
}

// The lists `which` of all.
topk::Lists lists(const topk::Lists& all, const std::vector<std::uint32_t>& which) {
  topk::Lists l{std::uint32_t(which.size()), all.m, {}};
  for (std::uint32_t i : which) l.entries.insert(l.entries.end(), all.list(i).begin(), all.list(i).end());
  return l;
}

// Every score times 2^shift (the order and exactness stay).
topk::Lists scaled(topk::Lists l, int shift) {
  for (auto& e : l.entries) e.score = std::ldexp(e.score, shift);
  return l;
}

// ---- objects partitioned by rank ----

topk::Options on_cpu() {
  topk::Options o;
  o.device = Device::cpu;
  return o;
}

// Runs topk_partitioned with this rank holding `count` objects from `begin`, checks it against the reference.
void check_partitioned(const topk::Lists& all, std::uint64_t begin, std::uint64_t count, std::uint64_t k,
                       const topk::Aggregate& agg = {}, const topk::Options& opts = on_cpu()) {
  const TopkResult r = topk_partitioned(context(), objects(all, begin, count), k, agg, opts);
  EXPECT_EQ(r.items, topk::reference(all, k, agg));
  EXPECT_EQ(r.report.count_out, r.items.size());
}

TEST(DistTopkPartitioned, EqualsTheReferenceForEveryDataAndK) {
  const Context& ctx = context();
  for (topk::Dist d : {topk::Dist::uniform, topk::Dist::correlated, topk::Dist::anticorrelated}) {
    const topk::Lists all = generated(1000, 4, d);
    const auto [begin, count] = even_slice(all.m, ctx.rank(), ctx.size());
    for (std::uint64_t k : {1, 10, 1000}) {
      SCOPED_TRACE(testing::Message() << to_string(d) << " k " << k);
      check_partitioned(all, begin, count, k);
      check_partitioned(all, begin, count, k, topk::Aggregate::parse("wsum:1,0,2.5,0.25", 4));
    }
  }
}

TEST(DistTopkPartitioned, EveryAlgorithmAndAggregate) {
  const Context& ctx = context();
  const topk::Lists all = generated(500, 3, topk::Dist::correlated);
  const auto [begin, count] = even_slice(all.m, ctx.rank(), ctx.size());
  // device auto: the GPU where the rank sees one (the same bits as the CPU), else the CPU.
  for (topk::Algo algo : {topk::Algo::auto_, topk::Algo::nra, topk::Algo::ta, topk::Algo::scan})
    for (const char* agg : {"sum", "min", "max"}) {
      SCOPED_TRACE(testing::Message() << to_string(algo) << " " << agg);
      topk::Options o;
      o.algo = algo;
      o.device = Device::auto_;
      check_partitioned(all, begin, count, 20, topk::Aggregate::parse(agg, 3), o);
    }
}

TEST(DistTopkPartitioned, TiesGoToTheSmallerGlobalId) {
  const Context& ctx = context();
  const topk::Lists all = tied(300, 3, 3);
  const auto [begin, count] = even_slice(all.m, ctx.rank(), ctx.size());
  for (std::uint64_t k : {1, 7, 150, 300}) check_partitioned(all, begin, count, k);
}

TEST(DistTopkPartitioned, KLargerThanARanksObjectsAndEmptyRanks) {
  const Context& ctx = context();
  const topk::Lists all = generated(40, 2, topk::Dist::uniform);
  // Rank 0 holds 3 objects, the last rank the rest, the others none.
  const int last = ctx.size() - 1;
  const std::uint64_t begin = ctx.rank() == 0 ? 0 : 3;
  std::uint64_t count = 0;
  if (ctx.rank() == 0) count = last == 0 ? 40 : 3;
  else if (ctx.rank() == last) count = 37;
  for (std::uint64_t k : {1, 5, 25, 40}) check_partitioned(all, begin, count, k);
  // A rank without objects may also pass no lists at all.
  const TopkResult r = topk_partitioned(ctx, count ? objects(all, begin, count) : topk::Lists{}, 6,
                                        topk::Aggregate::parse("wsum:2,1", 2));
  EXPECT_EQ(r.items, topk::reference(all, 6, topk::Aggregate::parse("wsum:2,1", 2)));
}

TEST(DistTopkPartitioned, RanksOfDifferentMagnitudesGiveTheWholeDatasScores) {
  // Ranks 1, 2, 3 hold scores 2^-100, 2^-110, 2^-120 times rank 0's: exact at their own scale of
  // exact sums, rounded at the whole data's (rank 0's) as the single-process query rounds them.
  const Context& ctx = context();
  const std::uint64_t per = 200;
  std::vector<topk::Lists> parts;
  for (int r = 0; r < ctx.size(); ++r)
    parts.push_back(scaled(generated(per, 3, topk::Dist::uniform, 11 + r), r == 0 ? 0 : -(90 + 10 * r)));
  topk::Lists all{3, per * std::uint64_t(ctx.size()), {}};
  for (std::uint32_t i = 0; i < 3; ++i)
    for (int r = 0; r < ctx.size(); ++r)  // larger scores first: each list stays sorted
      for (const topk::Entry& e : parts[r].list(i)) all.entries.push_back({std::uint32_t(e.id + per * r), e.score});
  check_partitioned(all, per * std::uint64_t(ctx.rank()), per, 50);
  check_partitioned(all, per * std::uint64_t(ctx.rank()), per, per * std::uint64_t(ctx.size()));
}

TEST(DistTopkPartitioned, KAboveEveryObjectIsAUsageErrorOnEveryRank) {
  const Context& ctx = context();
  const topk::Lists all = generated(20, 2, topk::Dist::uniform);
  const auto [begin, count] = even_slice(all.m, ctx.rank(), ctx.size());
  EXPECT_THROW(topk_partitioned(ctx, objects(all, begin, count), 21), UsageError);
  EXPECT_THROW(topk_partitioned(ctx, objects(all, begin, count), 0), UsageError);
}

TEST(DistTopkPartitioned, AMalformedShardFailsEveryRankNamingIt) {
  const Context& ctx = context();
  const int bad = ctx.size() - 1;
  topk::Lists mine = objects(generated(100, 2, topk::Dist::uniform), 0, 10);
  if (ctx.rank() == bad) std::swap(mine.entries[12], mine.entries[15]);  // list 1 no longer sorted
  try {
    topk_partitioned(ctx, mine, 5);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(fmt::format("rank {}: list 1, position", bad), 0), 0u) << e.what();
  }
  // Different list counts: the rank that differs from rank 0 is named.
  const topk::Lists other = generated(10, ctx.rank() == bad && bad > 0 ? 3 : 2, topk::Dist::uniform);
  if (ctx.size() > 1) {
    try {
      topk_partitioned(ctx, other, 5);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(fmt::format("rank {}: 3 lists, but rank 0 has 2", bad), 0), 0u) << e.what();
    }
  }
}

// ---- lists held by different ranks ----

// Runs topk_distributed_lists with list i on rank owner(i), checks it against the reference.
// Both with and without phase 1's lookups; returns the run with them.
template <class Owner>
TopkResult check_lists(const topk::Lists& all, std::uint64_t k, Owner&& owner, const topk::Aggregate& agg = {}) {
  const Context& ctx = context();
  std::vector<std::uint32_t> mine;
  for (std::uint32_t i = 0; i < all.n; ++i)
    if (owner(i) == ctx.rank()) mine.push_back(i);
  const auto expected = topk::reference(all, k, agg);
  EXPECT_EQ(topk_distributed_lists(ctx, lists(all, mine), mine, all.n, k, agg, {.exact_phase1_scores = false}).items,
            expected);
  TopkResult r = topk_distributed_lists(ctx, lists(all, mine), mine, all.n, k, agg);
  EXPECT_EQ(r.items, expected);
  return r;
}

auto round_robin() {
  return [](std::uint32_t i) { return int(i) % context().size(); };
}

TEST(DistTopkLists, EqualsTheReferenceForEveryDataAndK) {
  for (topk::Dist d : {topk::Dist::uniform, topk::Dist::correlated, topk::Dist::anticorrelated, topk::Dist::zipf}) {
    const topk::Lists all = generated(2000, 5, d);
    for (std::uint64_t k : {1, 10, 2000}) {
      SCOPED_TRACE(testing::Message() << to_string(d) << " k " << k);
      check_lists(all, k, round_robin());
      check_lists(all, k, round_robin(), topk::Aggregate::parse("wsum:1,0,2.5,0.25,3", 5));
    }
  }
}

TEST(DistTopkLists, PrunesEntriesAndCountsTheBytes) {
  const Context& ctx = context();
  const topk::Lists all = generated(20000, 4, topk::Dist::correlated);
  std::vector<std::uint32_t> mine;
  for (std::uint32_t i = 0; i < all.n; ++i)
    if (int(i) % ctx.size() == ctx.rank()) mine.push_back(i);
  const topk::Lists held = lists(all, mine);
  const TopkResult plain = topk_distributed_lists(ctx, held, mine, 4, 10, {}, {.exact_phase1_scores = false});
  const TopkResult r = topk_distributed_lists(ctx, held, mine, 4, 10);
  EXPECT_EQ(r.items, topk::reference(all, 10));
  const auto count = [](const TopkResult& x, const char* name) {
    return x.report.report.details().at("tput").at(name).get<std::uint64_t>();
  };
  for (const TopkResult* x : {&plain, &r}) {
    EXPECT_EQ(count(*x, "entries_phase1"), 40u);
    // Phase 2's threshold leaves out part of every list; phase 3 asks only for the survivors'
    // missing scores.
    EXPECT_LT(count(*x, "entries_phase1") + count(*x, "entries_phase2"), 4u * 20000u * 3u / 4u);
    EXPECT_GE(count(*x, "survivors"), 10u);
    EXPECT_LE(count(*x, "survivors"), count(*x, "objects_phase2"));
    EXPECT_LE(count(*x, "lookups_phase3"), 3 * count(*x, "survivors"));
  }
  // Phase 1's exact scores raise the threshold: phase 2 sends fewer entries.
  EXPECT_EQ(count(plain, "lookups_phase1"), 0u);
  EXPECT_GT(count(r, "lookups_phase1"), 0u);
  EXPECT_LT(count(r, "entries_phase2"), count(plain, "entries_phase2"));
  const auto& ranks = r.report.report.details().at("ranks");
  ASSERT_EQ(ranks.size(), std::size_t(ctx.size()));
  std::uint64_t sent = 0, received = 0;
  for (const auto& rk : ranks) {
    sent += rk.at("bytes_sent").get<std::uint64_t>();
    received += rk.at("bytes_received").get<std::uint64_t>();
  }
  EXPECT_EQ(sent, received);
  if (ctx.size() > 1) EXPECT_GT(r.report.traffic.bytes_received, 0u);
  else EXPECT_EQ(sent, 0u);
}

TEST(DistTopkLists, RanksHoldingNoListAndOneRankHoldingAll) {
  const Context& ctx = context();
  const topk::Lists three = generated(500, 3, topk::Dist::uniform);
  check_lists(three, 10, round_robin());  // on 4 ranks, rank 3 holds none
  check_lists(three, 10, [&](std::uint32_t) { return ctx.size() - 1; });
  check_lists(generated(500, 1, topk::Dist::uniform), 7, [](std::uint32_t) { return 0; });
}

TEST(DistTopkLists, TiesNegativeScoresAndListsWithOneScore) {
  const topk::Lists ties = tied(400, 4, 3);
  for (std::uint64_t k : {1, 9, 133, 400}) check_lists(ties, k, round_robin());
  // Scores below zero: the bounds start from each list's lowest score, not from 0.
  topk::Lists negative = generated(400, 4, topk::Dist::uniform);
  for (auto& e : negative.entries) e.score -= 0.75f;
  for (std::uint64_t k : {1, 10, 400}) check_lists(negative, k, round_robin());
  // Every list gives one score to every object: the k smallest ids.
  check_lists(tied(50, 3, 1), 5, round_robin());
  // Only some lists vary, or have weight: the others add their one value to every object.
  check_lists(tied(60, 4, 2), 8, round_robin(), topk::Aggregate::parse("wsum:0,0,1,0", 4));
  check_lists(tied(60, 4, 2), 8, round_robin(), topk::Aggregate::parse("wsum:0,0,0,0", 4));
}

void expect_error_from(const std::function<void()>& f, int rank, const std::string& text, bool usage) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_TRUE(usage) << e.what();
    EXPECT_EQ(std::string(e.what()), fmt::format("rank {}: {}", rank, text));
  } catch (const InputError& e) {
    EXPECT_FALSE(usage) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(fmt::format("rank {}: {}", rank, text), 0), 0u) << e.what();
  }
}

TEST(DistTopkLists, BadInputOnOneRankFailsEveryRankNamingIt) {
  const Context& ctx = context();
  const int last = ctx.size() - 1;
  const topk::Lists all = generated(100, 4, topk::Dist::uniform);
  std::vector<std::uint32_t> mine;
  for (std::uint32_t i = 0; i < all.n; ++i)
    if (int(i) % ctx.size() == ctx.rank()) mine.push_back(i);
  topk::Lists held = lists(all, mine);

  expect_error_from([&] { topk_distributed_lists(ctx, held, mine, 4, 5, topk::Aggregate::parse("min", 4)); }, 0,
                    "aggregate min: lists held by different ranks need sum or wsum (TPUT's bounds)", true);
  expect_error_from([&] { topk_distributed_lists(ctx, held, mine, 4, 101); }, 0,
                    "k = 101 must be between 1 and the number of objects (100)", true);

  // The last rank's first list is unsorted.
  topk::Lists broken = held;
  if (ctx.rank() == last) std::swap(broken.entries[3], broken.entries[40]);
  expect_error_from([&] { topk_distributed_lists(ctx, broken, mine, 4, 5); }, last, "list 0, position", false);

  // The last rank also claims list 0 (on one rank: a list given twice).
  std::vector<std::uint32_t> twice = mine;
  topk::Lists twice_held = held;
  if (ctx.rank() == last && last > 0) {
    twice.push_back(0);
    twice_held = lists(all, twice);
  }
  if (last > 0)
    expect_error_from([&] { topk_distributed_lists(ctx, twice_held, twice, 4, 5); }, last,
                      "list 0 is also held by rank 0", true);

  // The last rank counts 5 lists in all.
  if (last > 0)
    expect_error_from([&] { topk_distributed_lists(ctx, held, mine, ctx.rank() == last ? 5 : 4, 5); }, last,
                      "total_lists = 5, but rank 0 has 4", true);

  // Rank 0 names list 0 twice, or a list past the end.
  const std::vector<std::uint32_t> zero_twice{0, 0}, past_end{7};
  const topk::Lists two = lists(all, {0, 0}), one = lists(all, {0});
  expect_error_from(
      [&] { topk_distributed_lists(ctx, ctx.rank() == 0 ? two : held, ctx.rank() == 0 ? zero_twice : mine, 4, 5); }, 0,
      "list 0 is given twice", true);
  expect_error_from(
      [&] { topk_distributed_lists(ctx, ctx.rank() == 0 ? one : held, ctx.rank() == 0 ? past_end : mine, 4, 5); }, 0,
      "list index 7 (of list 0 here) is not below total_lists = 4", true);

  // Nobody holds list 4 of 5.
  expect_error_from([&] { topk_distributed_lists(ctx, held, mine, 5, 5); }, 0, "list 4 of 5 is held by no rank", true);

  // The last rank's lists have fewer objects.
  if (last > 0) {
    const topk::Lists shorter = ctx.rank() == last ? lists(generated(90, 4, topk::Dist::uniform), mine) : held;
    expect_error_from([&] { topk_distributed_lists(ctx, shorter, mine, 4, 5); }, last,
                      fmt::format("list {} has 90 objects, but the lists of rank 0 have 100", last), false);
  }
}

}  // namespace
}  // namespace tandem::dist::test
