// Top-k on the CPU: file format and validation, generators, aggregates, bounds, and every CPU path
// (NRA 1 thread and many, TA, scan, auto) against the brute-force reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <random>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/topk.hpp"
#include "test_util.hpp"
#include "topk/bounds.hpp"
#include "topk/internal.hpp"
#include "topk_cases.hpp"

using namespace tandem;
using namespace tandem::topk;

namespace {

Lists make(std::uint32_t n, std::vector<std::vector<std::pair<std::uint32_t, float>>> lists) {
  Lists l;
  l.n = n;
  l.m = lists.empty() ? 0 : lists[0].size();
  for (auto& li : lists)
    for (auto [id, s] : li) l.entries.push_back(Entry{id, s});
  return l;
}

using topk_cases::from_scores;

std::vector<Item> run(Algo algo, const Lists& l, std::uint64_t k, const Aggregate& agg = {}, int threads = 1,
                      std::uint64_t stride = 0) {
  Options o;
  o.algo = algo;
  o.device = Device::cpu;
  o.threads = threads;
  o.stride = stride;
  auto r = query(l, k, agg, o);
  EXPECT_TRUE(r.stats.finished);
  return r.items;
}

std::vector<Item> ref_prefix(const std::vector<Item>& all, std::uint64_t k) {
  return {all.begin(), all.begin() + std::ptrdiff_t(k)};
}

void expect_all_paths(const Lists& l, std::uint64_t k, const Aggregate& agg = {}) {
  const auto ref = reference(l, k, agg);
  ASSERT_EQ(ref.size(), std::min<std::uint64_t>(k, l.m));
  for (std::size_t i = 1; i < ref.size(); ++i) ASSERT_TRUE(better(ref[i - 1], ref[i]));
  EXPECT_EQ(run(Algo::nra, l, k, agg, 1), ref) << "nra 1 thread";
  EXPECT_EQ(run(Algo::nra, l, k, agg, 1, 1), ref) << "nra stride 1";
  EXPECT_EQ(run(Algo::nra, l, k, agg, 1, 100), ref) << "nra stride 100";
  EXPECT_EQ(run(Algo::nra, l, k, agg, 3, 7), ref) << "nra 3 threads";
  EXPECT_EQ(run(Algo::ta, l, k, agg, 1), ref) << "ta";
  EXPECT_EQ(run(Algo::scan, l, k, agg, 3), ref) << "scan";
  EXPECT_EQ(run(Algo::auto_, l, k, agg, 2), ref) << "auto";
}

}  // namespace

TEST(TopkBounds, OrderKeyIsDescendingScoreAndMergesSignedZero) {
  using namespace tandem::topk::detail;
  const double v[] = {-std::numeric_limits<double>::infinity(), -3.5, -1e-300, 0.0, 1e-300, 2.0, 7.25};
  for (std::size_t i = 1; i < std::size(v); ++i) EXPECT_GT(order_key(v[i - 1]), order_key(v[i]));
  EXPECT_EQ(order_key(-0.0), order_key(0.0));
  for (double x : v) EXPECT_EQ(key_score(order_key(x)), x);
  EXPECT_FALSE(std::signbit(key_score(order_key(-0.0))));
}

TEST(TopkBounds, UpperBoundAndTies) {
  using namespace tandem::topk::detail;
  AggSpec a;
  a.n = 3;
  a.scale = -120;
  for (int kind : {kSum, kMin, kMax}) {
    a.kind = kind;
    const Acc tval[3] = {acc_of(a, 0, 0.5f), acc_of(a, 1, 0.25f), acc_of(a, 2, 0.125f)};
    const Acc seen = kind == kSum ? acc_of(a, 0, 1.0f) : acc_of(a, 1, 0.3f);
    const double ub = acc_score(a, upper_bound(kind, seen, kind == kSum ? 0b001 : 0b010, 0b111, tval));
    EXPECT_EQ(ub, kind == kSum ? 1.375 : kind == kMin ? 0.125 : 0.5) << kind;
  }
  const Key96 kth = make_key(2.0, 10);
  EXPECT_TRUE(may_beat(2.0, 9, kth));  // same bound, smaller id: could still rank first
  EXPECT_FALSE(may_beat(2.0, 11, kth));
  EXPECT_FALSE(unseen_may_beat(1.5, kth));
  EXPECT_TRUE(unseen_may_beat(2.0, kth));  // an unseen object could tie with a smaller id
}

TEST(TopkBounds, FloatOrderKeyIsDescendingScoreAndMergesSignedZero) {
  using namespace tandem::topk::detail;
  const float v[] = {-std::numeric_limits<float>::infinity(), -3.5f, -1e-40f, 0.0f, 1e-40f, 2.0f, 7.25f};
  for (std::size_t i = 1; i < std::size(v); ++i) EXPECT_GT(order_key32(v[i - 1]), order_key32(v[i]));
  EXPECT_EQ(order_key32(-0.0f), order_key32(0.0f));
  for (float x : v) EXPECT_EQ(key32_score(order_key32(x)), x);
}

// The filtered scan's promise: every object's float aggregate (list order, as the GPU adds it) is
// within approx_error of its exact score, so the cut keeps every object of the exact top k.
TEST(TopkBounds, FloatAggregateIsWithinTheErrorBound) {
  using namespace tandem::topk::detail;
  std::vector<Lists> cases{topk_cases::mixed_magnitude_lists(4000, 5, 3), topk_cases::cancelling_lists()};
  GenOptions g;
  g.objects = 4000;
  g.lists = 6;
  cases.push_back(generate(g));
  for (const auto& l : cases) {
    const char* weights[] = {"0.1", "3", "7.5", "0", "1e-3", "2"};
    std::string wsum = "wsum:";
    for (std::uint32_t i = 0; i < l.n; ++i) wsum += std::string(i ? "," : "") + weights[i];
    for (const std::string& agg : {std::string("sum"), wsum, std::string("min"), std::string("max")}) {
      SCOPED_TRACE(agg);
      const auto spec = spec_of(Aggregate::parse(agg, l.n), l);
      const double err = approx_error(spec, list_max_abs(l));
      ASSERT_TRUE(std::isfinite(err));
      std::vector<Acc> exact(l.m, acc_identity(spec.kind));
      std::vector<float> approx(l.m, approx_identity(spec.kind));
      for (std::uint32_t i = 0; i < l.n; ++i)
        for (const Entry& e : l.list(i)) {
          exact[e.id] = acc_combine(spec.kind, exact[e.id], acc_of(spec, i, e.score));
          approx[e.id] = approx_combine(spec.kind, approx[e.id], approx_value(spec, i, e.score));
        }
      for (std::uint64_t o = 0; o < l.m; ++o) {
        const double e = acc_score(spec, exact[o]);
        if (is_sum(spec.kind)) EXPECT_LE(std::fabs(double(approx[o]) - e), err) << o;
        else EXPECT_EQ(double(approx[o]), e) << o;
      }
    }
  }
  AggSpec big;
  big.kind = kWsum;
  big.n = 2;
  big.w[0] = big.w[1] = 1e30;
  EXPECT_FALSE(std::isfinite(approx_error(big, {1e10f, 1.0f})));  // 1e40 is no float: no filter
}

TEST(TopkBounds, ApproxCutRoundsDown) {
  using namespace tandem::topk::detail;
  EXPECT_EQ(approx_cut(1.0f, 0.0), 1.0f);
  const float c = approx_cut(1.0f, 1e-9);  // 1 - 2e-9 is no float: the float below it
  EXPECT_LT(double(c), 1.0 - 2e-9);
  EXPECT_EQ(std::nextafter(c, 2.0f), 1.0f);
  EXPECT_EQ(approx_cut(-3e38f, 1e38), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(approx_cut(std::numeric_limits<float>::quiet_NaN(), 0.0), -std::numeric_limits<float>::infinity());
}

TEST(TopkBounds, FloatNraDepthsAndUpperBound) {
  using namespace tandem::topk::detail;
  // 10M objects in 4 independent lists: k = 100 objects are expected in every list by depth
  // m (k/m)^(1/4) = 10M x 0.0562.
  EXPECT_NEAR(double(nra_first_depth(10'000'000, 4, 100, 4096)), 562341.3, 1.0);
  EXPECT_EQ(nra_first_depth(10'000'000, 1, 100, 4096), 4096u);  // one list: k levels, at least the floor
  EXPECT_EQ(nra_first_depth(1000, 4, 5, 4096), 1000u);          // never past the lists' end
  EXPECT_EQ(nra_first_depth(1000, 4, 1000, 1), 1000u);          // k = m: everything
  EXPECT_EQ(nra_first_depth(0, 4, 1, 4096), 0u);
  EXPECT_EQ(nra_next_depth(4096, 10'000'000, 24, 100), 8192u);  // under k/4 complete: twice as deep
  EXPECT_EQ(nra_next_depth(4096, 10'000'000, 25, 100), 6144u);
  EXPECT_EQ(nra_next_depth(4096, 10'000'000), 6144u);
  EXPECT_EQ(nra_next_depth(9'000'000, 10'000'000), 10'000'000u);
  EXPECT_EQ(nra_next_depth(1, 10), 2u);
  const double tw[3] = {0.5, 0.25, 2.0};
  EXPECT_EQ(approx_upper_bound(1.0f, 0b111u, 0b111u, tw), 1.0);   // complete: its aggregate
  EXPECT_EQ(approx_upper_bound(1.0f, 0b001u, 0b111u, tw), 3.25);  // lists 1 and 2 unseen
  EXPECT_EQ(approx_upper_bound(0.0f, 0b000u, 0b111u, tw), 2.75);  // unseen everywhere: the thresholds
  // The packed word: seen lists in the low n bits, the partial in the rest, within packed_error.
  std::uint32_t w = 0;
  w = packed_add(w, 0.1f, 2, 4);
  w = packed_add(w, 0.7f, 0, 4);
  EXPECT_EQ(packed_seen(w, 4), 0b0101u);
  EXPECT_NEAR(double(packed_part(w, 4)), 0.8, packed_error(1e-7, 4));
  EXPECT_LE(std::fabs(double(packed_part(w, 4))), 0.8 + 1e-7);   // cleared bits round toward zero
  EXPECT_EQ(packed_part(packed_add(0, -2.5f, 1, 4), 4), -2.5f);  // exact values stay exact
  EXPECT_EQ(packed_error(1.0, 4), 65.0);
}

// The float NRA's rules (src/topk/gpu/nra.cu, nra_float) on the CPU: float partial aggregates (list
// order here, any order on the GPU: the bound holds for every order), the stop tests against the
// k-th complete float with the bound's margins, candidates within twice the bound, exact
// aggregates of the candidates only. Must give the exact answer on every data shape.
static std::vector<Item> float_nra_model(const Lists& l, std::uint64_t k, const Aggregate& agg) {
  using namespace tandem::topk::detail;
  const AggSpec a = spec_of(agg, l);
  const double error = 2 * packed_error(approx_error(a, list_max_abs(l)), l.n);
  const auto full = static_cast<std::uint32_t>(full_mask(l.n));
  std::vector<std::uint32_t> words(l.m, 0), completed;
  std::uint64_t depth = 0, next = nra_first_depth(l.m, l.n, k, 16);
  float kth = 0;
  for (bool done = false; !done; next = nra_next_depth(depth, l.m, completed.size(), k)) {
    std::vector<float> thr(l.n);
    for (std::uint32_t i = 0; i < l.n; ++i)
      for (std::uint64_t p = depth; p < next; ++p) {
        const Entry e = l.list(i)[p];
        words[e.id] = packed_add(words[e.id], approx_value(a, i, e.score), i, l.n);
        if (packed_seen(words[e.id], l.n) == full) completed.push_back(e.id);
        thr[i] = e.score;
      }
    depth = next;
    if (completed.size() < k) continue;
    std::vector<float> c;
    for (auto id : completed) c.push_back(packed_part(words[id], l.n));
    std::nth_element(c.begin(), c.begin() + (k - 1), c.end(), std::greater<>());
    kth = c[k - 1];
    if (depth == l.m) break;
    Acc t = acc_identity(a.kind);
    for (std::uint32_t i = 0; i < l.n; ++i) t = acc_combine(a.kind, t, acc_of(a, i, thr[i]));
    if (!(acc_score(a, t) < approx_cut(kth, error / 2))) continue;
    double tw[32];
    for (std::uint32_t i = 0; i < l.n; ++i) tw[i] = agg_value(a, i, thr[i]);
    done = true;
    for (std::uint64_t o = 0; o < l.m && done; ++o) {
      const std::uint32_t seen = packed_seen(words[o], l.n);
      done = seen == 0 || seen == full ||
             approx_upper_bound(packed_part(words[o], l.n), seen, full, tw) < approx_cut(kth, error);
    }
  }
  std::vector<Key96> keys;
  for (auto id : completed) {
    if (!(packed_part(words[id], l.n) >= approx_cut(kth, error))) continue;
    Acc v = acc_identity(a.kind);
    for (std::uint32_t i = 0; i < l.n; ++i)
      for (std::uint64_t p = 0; p < depth; ++p)
        if (l.list(i)[p].id == id) v = acc_combine(a.kind, v, acc_of(a, i, l.list(i)[p].score));
    keys.push_back(make_key(acc_score(a, v), id));
  }
  std::sort(keys.begin(), keys.end(), [](const Key96& x, const Key96& y) { return key_less(x, y); });
  std::vector<Item> items;
  for (std::uint64_t j = 0; j < k && j < keys.size(); ++j) items.push_back(Item{keys[j].id, key_score(keys[j].hi)});
  return items;
}

TEST(TopkBounds, FloatNraRulesGiveTheExactAnswer) {
  for (auto dist : {Dist::uniform, Dist::correlated, Dist::anticorrelated, Dist::zipf}) {
    SCOPED_TRACE(std::string(to_string(dist)));
    GenOptions g;
    g.objects = 3001;
    g.lists = 4;
    g.dist = dist;
    const auto l = generate(g);
    for (const char* agg : {"sum", "wsum:1,0.5,0,2"})
      for (std::uint64_t k : {1, 10, 100, 3001}) {
        const auto a = Aggregate::parse(agg, 4);
        EXPECT_EQ(float_nra_model(l, k, a), reference(l, k, a)) << agg << " k=" << k;
      }
  }
  for (std::uint32_t lists : {1u, 8u}) {  // one list, and the most the packed word holds
    GenOptions g;
    g.objects = 2001;
    g.lists = lists;
    const auto l = generate(g);
    for (std::uint64_t k : {1, 50}) EXPECT_EQ(float_nra_model(l, k, {}), reference(l, k)) << lists << " lists";
  }
  const auto mixed = topk_cases::mixed_magnitude_lists(3001, 5, 11);  // signs and magnitudes mixed
  for (const char* agg : {"sum", "wsum:1,0.5,3,0,2"})
    EXPECT_EQ(float_nra_model(mixed, 25, Aggregate::parse(agg, 5)), reference(mixed, 25, Aggregate::parse(agg, 5)))
        << agg;
  const auto c = topk_cases::cancelling_lists();
  for (std::uint64_t k : {1, 3, 5}) EXPECT_EQ(float_nra_model(c, k, {}), reference(c, k));
  GenOptions g;
  g.objects = 500;
  g.lists = 3;
  auto ties = generate(g);
  for (auto& e : ties.entries) e.score = 0.5f;
  EXPECT_EQ(float_nra_model(ties, 7, {}), reference(ties, 7));
}

// ---- NRA in one launch (src/topk/gpu/nra_one_launch.cu, k_nra_shallow): its pure rules ----

TEST(TopkBounds, OneLaunchNraDepthRules) {
  using namespace tandem::topk::detail;
  // Leading runs of the top score (-0.0 and 0.0 are one score).
  const auto l = from_scores({{1.0f, 0.0f, 0.5f}, {1.0f, -0.0f, 0.5f}, {0.5f, 0.0f, 0.5f}, {0.25f, -1.0f, 0.5f}});
  EXPECT_EQ(list_top_runs(l), (std::vector<std::uint64_t>{2, 3, 4}));
  AggSpec a;
  a.n = 3;
  for (int kind : {kSum, kMin, kMax}) {
    a.kind = kind;
    EXPECT_EQ(nra_least_depth(a, {2, 3, 4}, 4), 3u) << kind;  // past the shortest run
    EXPECT_EQ(nra_least_depth(a, {9, 9, 9}, 4), 4u) << kind;  // never past the lists' end
  }
  a.kind = kWsum;
  a.w[0] = 0;  // a list that does not count: reading past its run does not lower T
  a.w[1] = 2;
  a.w[2] = 0.5;
  EXPECT_EQ(nra_least_depth(a, {2, 3, 4}, 10), 4u);
  a.w[1] = a.w[2] = 0;
  EXPECT_EQ(nra_least_depth(a, {2, 3, 4}, 10), 10u);  // no list counts: only the full depth decides

  // The first depth: past the shortest run, or past the longest when the runs are within twice
  // each other; at least k and the floor, at most m.
  a.kind = kSum;
  EXPECT_EQ(shallow_first_depth(a, {125'053, 125'430, 126'061}, 10'000'000, 100, 4096), 126'062u);
  EXPECT_EQ(shallow_first_depth(a, {125'053, 300'000, 126'061}, 10'000'000, 100, 4096), 125'054u);
  EXPECT_EQ(shallow_first_depth(a, {1, 1, 1}, 10'000'000, 100, 4096), 4096u);
  EXPECT_EQ(shallow_first_depth(a, {1, 1, 1}, 10'000'000, 9000, 4096), 9000u);  // k complete objects take k levels
  EXPECT_EQ(shallow_first_depth(a, {1, 1, 1}, 1000, 100, 4096), 1000u);
  EXPECT_EQ(shallow_first_depth(a, {5000, 5000, 5000}, 1000, 1, 16), 1000u);  // all ties: the full depth
  AggSpec one;
  one.n = 1;
  EXPECT_EQ(shallow_first_depth(one, {1}, 10'000'000, 5000, 16), 5001u);  // one list: past the k-th's level
  a.kind = kWsum;
  a.w[0] = 1;
  a.w[1] = 0;  // its long run does not count
  a.w[2] = 1;
  EXPECT_EQ(shallow_first_depth(a, {10'000, 900'000, 12'000}, 10'000'000, 1, 16), 12'001u);
  EXPECT_EQ(shallow_budget(10'000'000, 125'055), 625'000u);
  EXPECT_EQ(shallow_budget(10'000'000, 900'000), 900'000u);
  EXPECT_EQ(shallow_budget(1000, 1000), 1000u);

  // The table: a key per entry (id + 1; 0: free), the scores apart (kUnseen: a NaN); one and a
  // half times the entries the first round can fill; homes inside it.
  EXPECT_EQ(table_key(0), 1u);
  EXPECT_EQ(table_key(0xfffffffeu), 0xffffffffu);  // ids stay below 2^32 - 1 (m < 2^32)
  float unseen;
  std::memcpy(&unseen, &kUnseen, sizeof unseen);
  EXPECT_TRUE(std::isnan(unseen));
  EXPECT_EQ(table_entries(4, 126'062), 756'384u);
  EXPECT_EQ(table_entries(1, 100), 4096u);
  EXPECT_FALSE(table_crowded(3072, 4096));
  EXPECT_TRUE(table_crowded(3073, 4096));
  for (std::uint64_t entries : {std::uint64_t{4096}, std::uint64_t{756'384}, std::uint64_t{1} << 23})
    for (std::uint32_t id : {0u, 1u, 12345u, 0x7fffffffu, 0xfffffffeu}) EXPECT_LT(table_home(id, entries), entries);
  EXPECT_EQ(shallow_next_depth(4096, false, 4096, 1 << 20), 8192u);       // phase 1: twice as deep
  EXPECT_EQ(shallow_next_depth(1000, false, 4096, 1 << 20), 5096u);       // at least the floor
  EXPECT_EQ(shallow_next_depth(125'055, true, 4096, 1 << 20), 156'318u);  // phase 2: a quarter deeper
  EXPECT_EQ(shallow_next_depth(8192, true, 4096, 1 << 20), 12'288u);
  EXPECT_EQ(shallow_next_depth(600'000, true, 4096, 625'000), 625'000u);  // never past the budget
  // From the floor to a budget of 2^28 levels: always fewer rounds than the kernel counts (64).
  for (bool phase2 : {false, true}) {
    std::uint64_t d = 4096;
    int rounds = 1;
    for (; d < (1u << 28); ++rounds) d = shallow_next_depth(d, phase2, 4096, 1u << 28);
    EXPECT_LT(rounds, 64) << phase2;
  }
}

// The one-launch NRA scales a sum's contributions by multiplying with 2^-scale: the same fixed
// value as to_fixed's ldexp, bit for bit, for every score (normal, subnormal, huge, signed zero).
TEST(TopkBounds, ScalingByTheUnitInverseIsToFixed) {
  using namespace tandem::topk::detail;
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> ex(-150, 128);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::vector<double> xs{0.0, -0.0, 1.0, -1.0, 0x1p-149, -0x1p-149, 0x1p-126, 3.4028234663852886e38};
  for (int j = 0; j < 20000; ++j) xs.push_back((rng() % 2 ? -1 : 1) * std::ldexp(mant(rng), ex(rng)));
  for (int scale : {-1022, -400, -269, -120, -119, -30, 0, 7, 8, 300, 1022}) {
    const double inv = unit_inverse(scale);
    ASSERT_NE(inv, 0.0) << scale;
    for (double x : xs) {
      const Acc a = to_fixed(x, scale), b = to_fixed_units(x * inv);
      EXPECT_TRUE(a.lo == b.lo && a.hi == b.hi) << x << " scale " << scale;
    }
  }
  EXPECT_EQ(unit_inverse(-1023), 0.0);  // 2^1023 and beyond: ldexp stays
  EXPECT_EQ(unit_inverse(1023), 0.0);
}

TEST(TopkBounds, OneLaunchStopKeysAreTheNraBounds) {
  using namespace tandem::topk::detail;
  const double scores[] = {-2.0, -0.0, 0.0, 0.5, 1.0, 1.0 + 0x1p-52, 3.0};
  const std::uint32_t ids[] = {0, 1, 7, 0xfffffffeu};
  for (double ks : scores)
    for (std::uint32_t kid : ids) {
      const Key96 kth = make_key(ks, kid);
      EXPECT_TRUE(key_less(kth, no_bound_key()));
      for (double b : scores) {
        EXPECT_EQ(key_less(kth, unseen_bound_key(b)), !unseen_may_beat(b, kth)) << ks << " " << b;
        for (std::uint32_t id : ids) {
          if (id != kid) {
            EXPECT_EQ(key_less(kth, make_key(b, id)), !may_beat(b, id, kth)) << ks << " " << b;
          }
        }
      }
    }
  EXPECT_EQ(key_min(make_key(1.0, 5), make_key(1.0, 4)).id, 4u);
  EXPECT_EQ(key_min(make_key(2.0, 5), make_key(1.0, 4)).id, 5u);
  // Samples: all candidates up to kShallowSamples, else evenly spread, first and increasing.
  EXPECT_EQ(shallow_samples(10), 10u);
  EXPECT_EQ(shallow_samples(5000), kShallowSamples);
  EXPECT_EQ(shallow_samples(100), 100u);
  for (std::uint64_t count : {std::uint64_t{1}, std::uint64_t{128}, std::uint64_t{129}, std::uint64_t{10342}}) {
    EXPECT_EQ(shallow_sample_at(0, count), 0u);
    for (std::uint64_t t = 1; t < shallow_samples(count); ++t) {
      EXPECT_LT(shallow_sample_at(t - 1, count), shallow_sample_at(t, count));
      EXPECT_LT(shallow_sample_at(t, count), count);
    }
  }
}

// The one-launch NRA's rules on the CPU (src/topk/gpu/nra_one_launch.cu, k_nra_shallow): rounds at the depths
// above, each ending with the stop test as keys - k complete objects before the smallest of the
// unseen bound key and every partially seen object's bound key - then the complete objects cut at
// the smallest sample with k of them at or before it, sorted. nullopt when it gives up at the
// budget or with its table more than three quarters full.
static std::optional<std::vector<Item>> one_launch_model(const Lists& l, std::uint64_t k, const Aggregate& agg,
                                                         std::uint64_t floor, std::uint64_t* depth_out = nullptr) {
  using namespace tandem::topk::detail;
  const AggSpec a = spec_of(agg, l);
  const std::uint64_t first = shallow_first_depth(a, list_top_runs(l), l.m, k, floor);
  const std::uint64_t budget = shallow_budget(l.m, first), full = full_mask(l.n);
  const std::uint64_t entries = table_entries(l.n, first);
  std::vector<Acc> acc(l.m, acc_identity(a.kind));
  std::vector<std::uint64_t> mask(l.m, 0);
  std::uint64_t depth = 0, next = first;
  for (int round = 0; round < 64; ++round) {
    for (std::uint32_t i = 0; i < l.n; ++i)
      for (std::uint64_t p = depth; p < next; ++p) {
        const Entry e = l.list(i)[p];
        acc[e.id] = acc_combine(a.kind, acc[e.id], acc_of(a, i, e.score));
        mask[e.id] |= std::uint64_t{1} << i;
      }
    depth = next;
    if (depth_out) *depth_out = depth;
    Acc tval[kMaxLists], t = acc_identity(a.kind);
    for (std::uint32_t i = 0; i < l.n; ++i)
      t = acc_combine(a.kind, t, tval[i] = acc_of(a, i, l.list(i)[depth - 1].score));
    const double tscore = acc_score(a, t);
    Key96 bound = depth < l.m ? unseen_bound_key(tscore) : no_bound_key();
    for (std::uint32_t i = 0; i < l.n; ++i)
      for (std::uint64_t p = 0; p < depth; ++p) {
        const std::uint32_t id = l.list(i)[p].id;
        if (mask[id] != full)
          bound = key_min(bound, make_key(acc_score(a, upper_bound(a.kind, acc[id], mask[id], full, tval)), id));
      }
    std::vector<Key96> complete;
    std::uint64_t before = 0, beat = 0;
    for (std::uint64_t p = 0; p < depth; ++p) {
      const std::uint32_t id = l.list(0)[p].id;
      if (mask[id] != full) continue;
      const Key96 key = make_key(acc_score(a, acc[id]), id);
      complete.push_back(key);
      before += key_less(key, bound);
      beat += key.hi < order_key(tscore);
    }
    if (before >= k) {
      // The k best complete objects (all before the bound): cut at the smallest sample with k of
      // them at or before it, then sorted.
      const std::uint64_t count = complete.size();
      Key96 cut = no_bound_key();
      for (std::uint64_t s = 0; s < shallow_samples(count); ++s) {
        const Key96 sample = complete[shallow_sample_at(s, count)];
        std::uint64_t rank = 0;
        for (const Key96& c : complete) rank += key_less(c, sample);
        if (rank + 1 >= k) cut = key_min(cut, sample);
      }
      std::vector<Key96> kept;
      for (const Key96& c : complete)
        if (!key_less(cut, c)) kept.push_back(c);
      EXPECT_GE(kept.size(), k);
      std::sort(kept.begin(), kept.end(), [](const Key96& x, const Key96& y) { return key_less(x, y); });
      for (std::uint64_t j = 0; j < k && j < kept.size(); ++j) EXPECT_TRUE(key_less(kept[j], bound));
      std::vector<Item> items;
      for (std::uint64_t j = 0; j < k && j < kept.size(); ++j) items.push_back(Item{kept[j].id, key_score(kept[j].hi)});
      return items;
    }
    std::uint64_t seen = 0;
    for (std::uint64_t o = 0; o < l.m; ++o) seen += mask[o] != 0;
    if (depth >= budget || table_crowded(seen, entries)) return std::nullopt;  // the budget, or the table fills up
    next = shallow_next_depth(depth, beat >= k, floor, budget);
  }
  return std::nullopt;
}

// The model against the brute force; where it gives up, the exact NRA (checked at every level)
// cannot stop within the budget either.
static void expect_one_launch_model(const Lists& l, std::uint64_t k, const Aggregate& agg, std::uint64_t floor,
                                    bool must_answer) {
  std::uint64_t depth = 0;
  const auto got = one_launch_model(l, k, agg, floor, &depth);
  if (got) {
    EXPECT_EQ(*got, reference(l, k, agg)) << "k=" << k << " " << agg.to_string();
    return;
  }
  EXPECT_FALSE(must_answer) << "gave up at depth " << depth << ", k=" << k << " " << agg.to_string();
  Options o;
  o.threads = 1;
  o.stride = 1;
  o.max_depth = depth;
  EXPECT_FALSE(nra_cpu(l, k, agg, o).stats.finished) << "gave up at depth " << depth << " where NRA stops";
}

TEST(TopkBounds, OneLaunchNraRulesGiveTheExactAnswer) {
  for (std::uint32_t n : {1u, 2u, 4u, 8u}) {
    GenOptions g;
    g.objects = 4001;
    g.lists = n;
    g.dist = Dist::correlated;
    const auto l = generate(g);
    SCOPED_TRACE(testing::Message() << n << " correlated lists");
    std::vector<std::string> aggs{"sum", "min", "max"};
    std::string w = "wsum:";
    for (std::uint32_t i = 0; i < n; ++i) w += std::string(i ? "," : "") + (i % 3 == 1 ? "0" : "0.75");
    aggs.push_back(w);
    for (const auto& agg : aggs)
      for (std::uint64_t k : {1, 10, 100, 4001})
        for (std::uint64_t floor : {1, 16, 4096})
          expect_one_launch_model(l, k, Aggregate::parse(agg, n), floor, n == 1);
  }
  for (auto dist : {Dist::uniform, Dist::anticorrelated, Dist::zipf}) {  // may give up: checked against NRA
    SCOPED_TRACE(std::string(to_string(dist)));
    GenOptions g;
    g.objects = 3001;
    g.dist = dist;
    const auto l = generate(g);
    for (const char* agg : {"sum", "min", "max"})
      for (std::uint64_t k : {1, 10, 3001}) expect_one_launch_model(l, k, Aggregate::parse(agg, 4), 16, k == 3001);
  }
  // Ties everywhere (the answer is ids 0..k-1), signed zeros, cancelling magnitudes.
  std::vector<std::vector<float>> same(3000, std::vector<float>(3, 0.5f));
  const auto ties = from_scores(same);
  for (std::uint64_t k : {1, 7, 1500, 3000}) expect_one_launch_model(ties, k, {}, 16, true);
  std::vector<std::vector<float>> zeros(2000, std::vector<float>(4));
  for (std::size_t o = 0; o < zeros.size(); ++o)
    for (std::size_t i = 0; i < 4; ++i) zeros[o][i] = (o + i) % 3 == 0 ? -0.0f : (o % 7 == 0 ? 0.25f : 0.0f);
  const auto z = from_scores(zeros);
  for (const char* agg : {"sum", "min", "max", "wsum:1,0,2,0.5"})
    for (std::uint64_t k : {1, 100, 2000}) expect_one_launch_model(z, k, Aggregate::parse(agg, 4), 16, false);
  const auto mixed = topk_cases::mixed_magnitude_lists(2001, 5, 11);
  for (const char* agg : {"sum", "wsum:1,0.5,3,0,2", "min", "max"})
    expect_one_launch_model(mixed, 25, Aggregate::parse(agg, 5), 16, false);
  const auto c = topk_cases::cancelling_lists();
  for (std::uint64_t k : {1, 3, 5}) expect_one_launch_model(c, k, {}, 1, false);
}

// The GPU tests' case where NRA in one launch must give up: correlated by the prefix estimate,
// but NRA stops only past the one-launch budget.
TEST(TopkBounds, OneLaunchNraGivesUpBehindACorrelatedHead) {
  using namespace tandem::topk::detail;
  const auto l = topk_cases::deep_behind_correlated_head(20011, 4, 1000, 5);
  validate(l);
  EXPECT_GT(estimate_overlap(l).ratio(), kCorrelatedRatio);
  for (const char* agg : {"sum", "min"}) {
    const auto a = Aggregate::parse(agg, 4);
    std::uint64_t depth = 0;
    EXPECT_FALSE(one_launch_model(l, 1100, a, 4096, &depth)) << agg;
    EXPECT_EQ(depth, 4096u) << agg;  // one round: the first depth is past the budget (m/16) already
    Options o;
    o.threads = 1;
    o.stride = 1;
    o.max_depth = depth;
    EXPECT_FALSE(nra_cpu(l, 1100, a, o).stats.finished) << agg;
    EXPECT_EQ(*one_launch_model(l, 100, a, 4096), reference(l, 100, a)) << agg;  // inside the head: shallow
  }
}

TEST(TopkFormat, RoundTripAndValidation) {
  TempDir t;
  GenOptions g;
  g.objects = 1000;
  g.lists = 3;
  const auto l = generate(g);
  write_lists(t.file("a.tkl"), l);
  const auto back = read_lists(t.file("a.tkl"));
  EXPECT_EQ(back.n, 3u);
  EXPECT_EQ(back.m, 1000u);
  EXPECT_EQ(std::memcmp(back.entries.data(), l.entries.data(), l.entries.size() * 8), 0);

  auto expect_error = [](Lists bad, const std::string& needle) {
    try {
      validate(bad);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Lists unsorted = make(1, {{{0, 0.5f}, {1, 0.7f}}});
  expect_error(unsorted, "list 0, position 1: not sorted");
  expect_error(make(2, {{{0, 0.5f}, {1, 0.4f}}, {{0, 0.5f}, {2, 0.4f}}}), "list 1, position 1: id 2 is out of range");
  expect_error(make(1, {{{1, 0.5f}, {1, 0.4f}}}),
               "list 0, position 1: id 1 is duplicated (first at position 0); id 0 is missing");
  expect_error(make(1, {{{0, std::nanf("")}, {1, 0.4f}}}), "list 0, position 0: score is NaN");
  expect_error(make(1, {{{0, std::numeric_limits<float>::infinity()}, {1, 0.4f}}}), "score is infinite");
  Lists none;
  none.n = 0;
  expect_error(none, "0 lists");
  // -0.0 after +0.0 is not an inversion
  EXPECT_NO_THROW(validate(make(1, {{{0, 0.0f}, {1, -0.0f}, {2, -1.0f}}})));

  // Truncated, wrong magic, trailing bytes.
  {
    std::ofstream f(t.file("trunc.tkl"), std::ios::binary);
    std::uint32_t n = 2;
    std::uint64_t m = 3;
    f.write("TKL1", 4);
    f.write(reinterpret_cast<char*>(&n), 4);
    f.write(reinterpret_cast<char*>(&m), 8);
    Entry e{0, 1.0f};
    for (int i = 0; i < 4; ++i) f.write(reinterpret_cast<char*>(&e), 8);
  }
  try {
    read_lists(t.file("trunc.tkl"));
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated in list 1 at position 1"), std::string::npos) << e.what();
  }
  {
    std::ofstream f(t.file("magic.tkl"), std::ios::binary);
    f.write("TKL2xxxxxxxxxxxx", 16);
  }
  EXPECT_THROW(read_lists(t.file("magic.tkl")), InputError);
  EXPECT_THROW(read_lists(t.file("missing.tkl")), InputError);
}

TEST(TopkGenerate, DeterministicAndValid) {
  for (auto dist : {Dist::uniform, Dist::correlated, Dist::anticorrelated, Dist::zipf}) {
    GenOptions g;
    g.objects = 3001;
    g.lists = 5;
    g.dist = dist;
    g.seed = 42;
    g.threads = 1;
    const auto a = generate(g);
    g.threads = 3;
    const auto b = generate(g);
    EXPECT_NO_THROW(validate(a));
    EXPECT_EQ(std::memcmp(a.entries.data(), b.entries.data(), a.entries.size() * 8), 0) << to_string(dist);
    g.seed = 43;
    const auto c = generate(g);
    EXPECT_NE(std::memcmp(a.entries.data(), c.entries.data(), a.entries.size() * 8), 0);
    for (const auto& e : a.entries) {
      ASSERT_GE(e.score, 0.0f);
      ASSERT_LT(e.score, 1.0f);
      ASSERT_EQ(std::ldexp(double(e.score), 24), std::floor(std::ldexp(double(e.score), 24)));
    }
  }
}

TEST(TopkAggregate, Parse) {
  EXPECT_EQ(Aggregate::parse("sum", 3).kind, ScoreCombine::sum);
  EXPECT_EQ(Aggregate::parse("min", 3).kind, ScoreCombine::min);
  const auto w = Aggregate::parse("wsum:1,0.5,2", 3);
  EXPECT_EQ(w.weights, (std::vector<double>{1, 0.5, 2}));
  EXPECT_EQ(w.to_string(), "wsum:1,0.5,2");
  EXPECT_THROW(Aggregate::parse("wsum:1,2", 3), UsageError);
  EXPECT_THROW(Aggregate::parse("wsum:1,-2,1", 3), UsageError);
  EXPECT_THROW(Aggregate::parse("wsum:1,x,1", 3), UsageError);
  EXPECT_THROW(Aggregate::parse("wsum:1,nan,1", 3), UsageError);
  EXPECT_THROW(Aggregate::parse("avg", 3), UsageError);
  EXPECT_THROW(parse_algo("fa"), UsageError);
  EXPECT_THROW(parse_memory("host"), UsageError);
  EXPECT_THROW(parse_dist("normal"), UsageError);
}

TEST(TopkQuery, RejectsBadK) {
  const auto l = make(1, {{{0, 1.0f}, {1, 0.5f}}});
  EXPECT_THROW(query(l, 0), UsageError);
  EXPECT_THROW(query(l, 3), UsageError);
  Lists empty;
  empty.n = 2;
  EXPECT_THROW(query(empty, 1), UsageError);
}

TEST(TopkQuery, TinyCases) {
  // One object, one list.
  expect_all_paths(make(1, {{{0, 0.25f}}}), 1);
  // One list: the answer is its prefix (ties by smaller id).
  expect_all_paths(from_scores({{0.5f}, {0.5f}, {0.75f}, {0.5f}, {0.0f}}), 3);
  // k = m.
  expect_all_paths(from_scores({{0.1f, 0.9f}, {0.2f, 0.2f}, {0.3f, 0.0f}}), 3);
}

TEST(TopkQuery, TiesAndSignedZeroAreDeterministic) {
  // Every object ties: the answer is ids 0..k-1 on every path.
  std::vector<std::vector<float>> same(37, std::vector<float>{0.5f, 0.25f, 0.0f});
  const auto l = from_scores(same);
  const auto ref = reference(l, 5);
  for (std::uint32_t i = 0; i < 5; ++i) EXPECT_EQ(ref[i].id, i);
  expect_all_paths(l, 5);
  // Negative zero equals zero.
  std::vector<std::vector<float>> z;
  for (int o = 0; o < 20; ++o) z.push_back({o % 2 ? -0.0f : 0.0f, o % 3 ? -0.0f : 0.0f});
  const auto lz = from_scores(z);
  expect_all_paths(lz, 7);
  for (const auto& it : reference(lz, 7)) EXPECT_FALSE(std::signbit(it.score));
}

TEST(TopkQuery, NegativeScoresAndAggregates) {
  std::vector<std::vector<float>> s;
  for (int o = 0; o < 257; ++o)
    s.push_back({float((o * 37) % 101) - 50.0f, float((o * 53) % 89) * -0.5f, float((o * 11) % 7)});
  const auto l = from_scores(s);
  for (const char* agg : {"sum", "min", "max", "wsum:1,0,2.5"}) {
    SCOPED_TRACE(agg);
    expect_all_paths(l, 10, Aggregate::parse(agg, 3));
    expect_all_paths(l, 1, Aggregate::parse(agg, 3));
    expect_all_paths(l, 257, Aggregate::parse(agg, 3));
  }
}

TEST(TopkQuery, GeneratedDistributions) {
  for (auto dist : {Dist::uniform, Dist::correlated, Dist::anticorrelated, Dist::zipf}) {
    SCOPED_TRACE(std::string(to_string(dist)));
    GenOptions g;
    g.objects = 5003;  // not a power of two
    g.lists = 4;
    g.dist = dist;
    const auto l = generate(g);
    expect_all_paths(l, 10);
    expect_all_paths(l, 1, Aggregate::parse("max", 4));
    expect_all_paths(l, 64, Aggregate::parse("wsum:0.5,1,2,0", 4));
  }
}

TEST(TopkQuery, ManyLists) {
  GenOptions g;
  g.objects = 700;
  g.lists = 64;
  expect_all_paths(generate(g), 20);
  expect_all_paths(generate(g), 20, Aggregate::parse("min", 64));
}

TEST(TopkQuery, DepthAndAutoChoices) {
  GenOptions g;
  g.objects = 20000;
  g.lists = 4;
  g.dist = Dist::correlated;
  const auto cor = generate(g);
  Options o;
  o.device = Device::cpu;
  o.algo = Algo::nra;
  o.stride = 50;
  auto r = query(cor, 10, {}, o);
  EXPECT_LT(r.stats.mean_depth(), 0.2 * 20000);  // correlated: NRA stops early
  EXPECT_EQ(r.stats.depth.size(), 4u);
  EXPECT_GT(r.stats.rounds, 0u);
  g.dist = Dist::anticorrelated;
  const auto anti = generate(g);
  o.algo = Algo::auto_;
  auto ra = query(anti, 10, {}, o);
  EXPECT_EQ(ra.stats.algo, "scan");
  EXPECT_EQ(ra.items, reference(anti, 10));
  EXPECT_LT(estimate_overlap(anti).ratio(), 0.3);
  EXPECT_GT(estimate_overlap(cor).ratio(), 3.0);
  // A depth cap that is too small leaves NRA unfinished (and auto falls back to the scan).
  o.algo = Algo::nra;
  o.max_depth = 10;
  o.stride = 0;
  auto capped = nra_cpu(anti, 10, {}, o);
  EXPECT_FALSE(capped.stats.finished);
  EXPECT_TRUE(capped.items.empty());
}

TEST(TopkGpu, CpuOnlyBuildReportsNoDevice) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is present";
  const auto l = make(1, {{{0, 1.0f}, {1, 0.5f}}});
  Options o;
  o.device = Device::gpu;
  EXPECT_THROW(query(l, 1, {}, o), NoDeviceError);
  o.device = Device::auto_;
  EXPECT_EQ(query(l, 1, {}, o).items.size(), 1u);
}

// ---- the same answer on every path: exact sums ----

TEST(TopkExact, FixedPointSumsRoundOnceAndCarry) {
  using namespace tandem::topk::detail;
  std::mt19937_64 rng(7);
  for (int scale : {-120, -53, 0, 40}) {
    for (int rep = 0; rep < 2000; ++rep) {
      // Values spread over 2^120 units, both signs: the partial sums cross 2^64 in both directions.
      Acc sum{0, 0};
      __int128 want = 0;
      const int terms = 1 + int(rng() % 64);
      for (int t = 0; t < terms; ++t) {
        const double x = std::ldexp(double(rng() >> 11) * (rng() % 2 ? 1 : -1), scale + int(rng() % 68));
        const Acc a = to_fixed(x, scale);
        EXPECT_EQ(from_fixed(a, scale), x);  // multiples of 2^scale round-trip
        sum = fixed_add(sum, a);
        want += static_cast<__int128>(std::ldexp(x, -scale));
      }
      const __int128 got = (static_cast<__int128>(sum.hi) << 64) | sum.lo;
      ASSERT_TRUE(got == want);
      EXPECT_EQ(from_fixed(sum, scale), std::ldexp(static_cast<double>(want), scale));  // one rounding
    }
  }
  // Below the unit: rounded to nearest, ties to even.
  EXPECT_EQ(from_fixed(to_fixed(0.75, 0), 0), 1.0);
  EXPECT_EQ(from_fixed(to_fixed(0.5, 0), 0), 0.0);
  EXPECT_EQ(from_fixed(to_fixed(-2.5, 0), 0), -2.0);
}

TEST(TopkExact, CancellingMagnitudesGiveOneAnswerOnEveryPath) {
  const auto l = topk_cases::cancelling_lists();
  const auto ref = reference(l, 5);
  const std::vector<Item> want{{0, 1.0}, {1, 0.75}, {2, 0.5}, {4, 0.125}, {3, 0.0}};
  EXPECT_EQ(ref, want);
  for (std::uint64_t k : {1, 3, 5}) {
    SCOPED_TRACE(k);
    expect_all_paths(l, k);
    for (int threads = 1; threads <= 8; ++threads) EXPECT_EQ(run(Algo::nra, l, k, {}, threads), ref_prefix(want, k));
  }
  const auto w = Aggregate::parse("wsum:1,3,1", 3);
  EXPECT_EQ(reference(l, 1, w), (std::vector<Item>{{0, 3.0}}));
  expect_all_paths(l, 2, w);
}

TEST(TopkExact, MixedMagnitudesSameOnEveryPathThreadCountAndRun) {
  const auto l = topk_cases::mixed_magnitude_lists(3000, 5, 11);
  const int most = std::max(8, default_threads());
  for (const char* agg : {"sum", "wsum:1,0.5,3,0,2", "min", "max"}) {
    SCOPED_TRACE(agg);
    const auto a = Aggregate::parse(agg, 5);
    const auto ref = reference(l, 25, a);
    expect_all_paths(l, 25, a);
    for (int threads = 1; threads <= most; ++threads) {
      EXPECT_EQ(run(Algo::nra, l, 25, a, threads), ref) << threads << " threads";
      EXPECT_EQ(run(Algo::scan, l, 25, a, threads), ref) << threads << " threads";
    }
    for (int rep = 0; rep < 20; ++rep) EXPECT_EQ(run(Algo::nra, l, 25, a, most, 64), ref) << "run " << rep;
  }
}

TEST(TopkExact, ScoresAreTheDocumentedRoundedSum) {
  // The score of an object: each contribution rounded to the lists' unit 2^scale, added exactly,
  // rounded once to a double - computed here with the compiler's 128-bit integers.
  const auto l = topk_cases::mixed_magnitude_lists(500, 4, 5);
  const auto a = Aggregate::parse("wsum:0.1,1,7,0.3", 4);
  const auto spec = topk::detail::spec_of(a, l);
  std::vector<__int128> units(l.m, 0);
  for (std::uint32_t i = 0; i < l.n; ++i)
    for (const Entry& e : l.list(i))
      units[e.id] += static_cast<__int128>(std::rint(std::ldexp(a.weights[i] * double(e.score), -spec.scale)));
  for (const Item& it : reference(l, l.m, a))
    EXPECT_EQ(it.score, std::ldexp(static_cast<double>(units[it.id]), spec.scale) + 0.0);
}

TEST(TopkExact, WeightTimesScoreOverflowIsAnInputError) {
  const auto l = topk_cases::cancelling_lists();
  EXPECT_THROW(query(l, 1, Aggregate::parse("wsum:1e300,1,1", 3)), InputError);
}

// validate()'s checks on several threads against the sequential ones: every kind of problem,
// in a chunk's middle and across the chunks' edges, for thread counts that cut the lists
// differently; and validate() still names the first problem.
TEST(TopkValidate, ChecksOnSeveralThreadsFindWhatTheSequentialOnesFind) {
  constexpr std::uint64_t m = 100'003;
  std::mt19937_64 rng(11);
  Lists good;
  good.n = 3;
  good.m = m;
  good.entries.resize(3 * m);
  for (std::uint32_t i = 0; i < 3; ++i) {
    std::vector<std::uint32_t> ids(m);
    for (std::uint32_t j = 0; j < m; ++j) ids[j] = j;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (std::uint64_t p = 0; p < m; ++p)  // descending, with runs of ties and a -0.0 after +0.0
      good.entries[i * m + p] = Entry{ids[p], p < m / 2 ? float((m - p) / 7) : (p % 2 ? -0.0f : 0.0f) - float(p / 5)};
  }
  for (int threads : {1, 2, 3, 7, 16}) EXPECT_TRUE(topk::detail::lists_pass_checks(good, threads)) << threads;
  EXPECT_NO_THROW(validate(good));

  struct Bad {
    std::string what, needle;
    std::function<void(Lists&)> spoil;
  };
  const std::uint64_t edge7 = m * 3 / 7;  // where the 4th of 7 chunks starts
  const std::vector<Bad> bad = {
      {"duplicate in two chunks", "is duplicated",
       [&](Lists& l) { l.entries[2 * m + m - 3].id = l.entries[2 * m + 5].id; }},
      {"duplicate in one chunk", "is duplicated", [&](Lists& l) { l.entries[m + 11].id = l.entries[m + 10].id; }},
      {"NaN in the middle", "score is NaN", [&](Lists& l) { l.entries[m / 2].score = std::nanf(""); }},
      {"infinity first", "score is infinite",
       [&](Lists& l) { l.entries[m].score = std::numeric_limits<float>::infinity(); }},
      {"ascending at a chunk's edge", "not sorted",
       [&](Lists& l) { l.entries[edge7].score = l.entries[edge7 - 1].score + 1.0f; }},
      {"id out of range", "is out of range", [&](Lists& l) { l.entries[2 * m + m - 1].id = std::uint32_t(m); }},
  };
  for (const auto& b : bad) {
    Lists l = good;
    b.spoil(l);
    for (int threads : {1, 2, 3, 7, 16}) EXPECT_FALSE(topk::detail::lists_pass_checks(l, threads)) << b.what << threads;
    try {
      validate(l);
      ADD_FAILURE() << "no error for " << b.what;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(b.needle), std::string::npos) << b.what << ": " << e.what();
    }
  }
}
