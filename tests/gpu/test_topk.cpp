// Top-k on the GPU: NRA (fixed and adaptive stride, device and managed memory), TA and the scan
// against the CPU brute force, on awkward sizes, ties, every aggregate and sums that cancel across
// magnitudes (the same bits as the CPU); NRA in one launch on correlated lists, its fallbacks and
// the state it leaves.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/topk.hpp"
#include "test_util.hpp"
#include "topk_cases.hpp"

using namespace tandem;
using namespace tandem::topk;

namespace {
bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

// auto's account of its choice (the algorithms' own notes hold timing-free counts too, but the plan
// is what must match).
std::vector<std::string> auto_notes(const Report& r) {
  std::vector<std::string> out;
  for (const auto& n : r.notes)
    if (n.rfind("auto:", 0) == 0) out.push_back(n);
  return out;
}

Lists four_lists(std::uint64_t m, Dist dist) {
  GenOptions g;
  g.objects = m;
  g.lists = 4;
  g.dist = dist;
  return generate(g);
}

bool has_stage(const Result& r, const char* text) {
  for (const auto& st : r.report.stages)
    if (st.name.find(text) != std::string::npos) return true;
  return false;
}

bool has_note(const Result& r, const char* text) {
  for (const auto& n : r.report.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// The stages and notes of a result, for failure messages.
std::string path(const Result& r) {
  std::string out;
  for (const auto& st : r.report.stages) out += "\n  stage: " + st.name;
  for (const auto& n : r.report.notes) out += "\n  note: " + n;
  return out;
}

// NRA in one launch answered (the stage that says so), or gave up within its budget with a note
// and another path answered.
constexpr const char* kOneLaunch = "NRA in one launch: ";
constexpr const char* kGaveUp = "NRA in one launch did not stop";

Lists correlated(std::uint64_t m, std::uint32_t n, std::uint64_t seed = 1) {
  GenOptions g;
  g.objects = m;
  g.lists = n;
  g.dist = Dist::correlated;
  g.seed = seed;
  return generate(g);
}

void check_gpu_paths(DeviceLists& d, const Lists& l, std::uint64_t k, const Aggregate& agg) {
  const auto ref = reference(l, k, agg);
  Options o;
  for (std::uint64_t stride : {std::uint64_t{0}, std::uint64_t{100}, std::uint64_t{1}}) {
    if (stride == 1 && l.m > 5000) continue;
    o.stride = stride;
    auto r = nra_gpu(d, k, agg, o);
    EXPECT_TRUE(r.stats.finished);
    EXPECT_EQ(r.items, ref) << "nra stride " << stride;
    EXPECT_EQ(ta_gpu(d, k, agg, o).items, ref) << "ta stride " << stride;
  }
  EXPECT_EQ(scan_gpu(d, k, agg, o).items, ref) << "scan";
}
}  // namespace

TEST(GpuTopk, AllPathsMatchBruteForce) {
  TANDEM_REQUIRE_GPU();
  const std::uint64_t m = sanitizer() ? 3001 : 200003;
  for (auto dist : {Dist::uniform, Dist::correlated, Dist::anticorrelated, Dist::zipf}) {
    SCOPED_TRACE(std::string(to_string(dist)));
    const auto l = four_lists(m, dist);
    auto d = upload(l);
    for (const char* agg : {"sum", "min", "max", "wsum:1,0.5,0,2"}) {
      SCOPED_TRACE(agg);
      check_gpu_paths(*d, l, 100, Aggregate::parse(agg, 4));
    }
    check_gpu_paths(*d, l, 1, {});
    check_gpu_paths(*d, l, m, {});  // k = m
  }
}

TEST(GpuTopk, TinyTiesAndManyLists) {
  TANDEM_REQUIRE_GPU();
  for (std::uint64_t m : {1ull, 2ull, 7ull, 1000ull}) {
    GenOptions g;
    g.objects = m;
    g.lists = 3;
    auto l = generate(g);
    for (auto& e : l.entries) e.score = 0.5f;  // every object ties: the answer is ids 0..k-1
    auto d = upload(l);
    check_gpu_paths(*d, l, std::min<std::uint64_t>(m, 5), {});
  }
  GenOptions g;
  g.objects = sanitizer() ? 500 : 20000;
  g.lists = 64;
  const auto l = generate(g);
  auto d = upload(l);
  check_gpu_paths(*d, l, 10, {});
  check_gpu_paths(*d, l, 10, Aggregate::parse("min", 64));
}

// The float NRA on lists fresh from upload (its first query: no select state from an earlier
// one), shallower than its first probe, and deep enough for several probes; sums and weighted sums.
TEST(GpuTopk, FloatNraOnFreshUploads) {
  TANDEM_REQUIRE_GPU();
  for (std::uint64_t m : {std::uint64_t{2000}, std::uint64_t(sanitizer() ? 20000 : 400000)}) {
    for (auto dist : {Dist::uniform, Dist::correlated}) {
      const auto l = four_lists(m, dist);
      for (const char* agg : {"sum", "wsum:0.5,1,2,0.25"}) {
        SCOPED_TRACE(testing::Message() << "m=" << m << " " << to_string(dist) << " " << agg);
        auto d = upload(l);
        const auto a = Aggregate::parse(agg, 4);
        const auto r = nra_gpu(*d, 20, a, {});
        EXPECT_EQ(r.items, reference(l, 20, a));
        EXPECT_EQ(r.stats.algo, "nra");
      }
    }
  }
}

TEST(GpuTopk, ManagedMemoryAndQuery) {
  TANDEM_REQUIRE_GPU();
  GenOptions g;
  g.objects = sanitizer() ? 2000 : 100000;
  g.lists = 4;
  const auto l = generate(g);
  auto d = upload(l, Memory::managed);
  check_gpu_paths(*d, l, 50, {});
  Options o;
  o.device = Device::gpu;
  for (auto algo : {Algo::nra, Algo::ta, Algo::scan, Algo::auto_}) {
    o.algo = algo;
    auto r = query(l, 50, {}, o);
    EXPECT_EQ(r.items, reference(l, 50)) << to_string(algo);
    EXPECT_EQ(r.stats.where.rfind("gpu", 0), 0u);
  }
  o.memory = Memory::managed;
  o.algo = Algo::nra;
  EXPECT_EQ(query(l, 50, {}, o).items, reference(l, 50));
}

TEST(GpuTopk, CancellingMagnitudesGiveTheCpuAnswer) {
  TANDEM_REQUIRE_GPU();
  const auto small = topk_cases::cancelling_lists();
  auto ds = upload(small);
  EXPECT_EQ(nra_gpu(*ds, 1, {}, {}).items, (std::vector<Item>{{0, 1.0}}));
  for (std::uint64_t k : {1, 3, 5}) check_gpu_paths(*ds, small, k, {});
  check_gpu_paths(*ds, small, 2, Aggregate::parse("wsum:1,3,1", 3));

  const auto l = topk_cases::mixed_magnitude_lists(sanitizer() ? 3001 : 200003, 5, 11);
  auto d = upload(l);
  for (const char* agg : {"sum", "wsum:1,0.5,3,0,2", "min", "max"}) {
    SCOPED_TRACE(agg);
    const auto a = Aggregate::parse(agg, 5);
    check_gpu_paths(*d, l, 25, a);
    const auto ref = reference(l, 25, a);
    for (int rep = 0; rep < 10; ++rep) EXPECT_EQ(nra_gpu(*d, 25, a, {}).items, ref) << "run " << rep;
  }
}

// query() on lists already on the GPU: the same plan and answer as the query that uploads, for
// every data shape auto tells apart, and many queries over one upload.
TEST(GpuTopk, QueryOnResidentListsPlansAsTheUploadingQuery) {
  TANDEM_REQUIRE_GPU();
  const std::uint64_t m = sanitizer() ? 3001 : 200003;
  for (auto dist : {Dist::uniform, Dist::correlated, Dist::anticorrelated}) {
    SCOPED_TRACE(std::string(to_string(dist)));
    const auto l = four_lists(m, dist);
    auto d = upload(l);
    EXPECT_EQ(d->overlap().observed, estimate_overlap(l).observed);
    Options host;
    host.device = Device::gpu;
    for (auto algo : {Algo::auto_, Algo::nra, Algo::scan}) {
      Options o;
      o.algo = host.algo = algo;
      const auto agg = Aggregate::parse("wsum:1,0.25,2,0.5", 4);
      const auto r = query(*d, 100, agg, o);
      const auto up = query(l, 100, agg, host);
      EXPECT_EQ(r.items, reference(l, 100, agg)) << to_string(algo);
      EXPECT_EQ(r.stats.algo, up.stats.algo) << to_string(algo);
      EXPECT_EQ(auto_notes(r.report), auto_notes(up.report)) << to_string(algo);
    }
    for (std::uint64_t k : {1, 7, 100}) EXPECT_EQ(query(*d, k).items, reference(l, k)) << "k " << k;
  }
  GenOptions g;
  g.objects = 100;
  auto d = upload(generate(g));
  EXPECT_THROW(query(*d, 0), UsageError);
  EXPECT_THROW(query(*d, 101), UsageError);
  EXPECT_THROW(query(*d, 5, Aggregate::parse("wsum:1,2", 2)), UsageError);
  Lists hollow;  // n x m without the entries (a moved-from Lists): refused, never read
  hollow.n = 4;
  hollow.m = 1000;
  EXPECT_THROW(upload(hollow), InputError);
}

// The scan's float filter: used on ordinary lists; ties beyond its candidate room and weights
// whose products overflow a float send it to the exact scan of every object, with a note.
TEST(GpuTopk, ScanFilterAndItsFallbacksGiveTheCpuAnswer) {
  TANDEM_REQUIRE_GPU();
  const auto l = four_lists(sanitizer() ? 3001 : 200003, Dist::uniform);
  auto d = upload(l);
  auto r = scan_gpu(*d, 100, {}, {});
  EXPECT_EQ(r.items, reference(l, 100));
  EXPECT_FALSE(has_note(r, "every object scored exactly"));
  EXPECT_LT(r.stats.candidates, 4096u);
  EXPECT_TRUE(has_stage(r, "index build"));
  r = scan_gpu(*d, 10, Aggregate::parse("min", 4), {});  // the index is kept with the lists
  EXPECT_EQ(r.items, reference(l, 10, Aggregate::parse("min", 4)));
  EXPECT_FALSE(has_stage(r, "index build"));
  EXPECT_TRUE(d->indexed());
  r = query(*d, 100);  // auto takes the scan once the lists are indexed
  EXPECT_EQ(r.items, reference(l, 100));
  EXPECT_EQ(r.stats.algo, "scan");
  EXPECT_TRUE(has_note(r, "auto: scan - the lists are indexed by id and not correlated"));

  const std::uint64_t m = sanitizer() ? 70001 : 300007;  // more equal objects than the filter keeps
  std::vector<std::vector<float>> same(m, std::vector<float>(3, 0.5f));
  same[m / 2] = {0.5f, 0.5f, 0.75f};
  const auto ties = topk_cases::from_scores(same);
  auto dt = upload(ties);
  for (std::uint64_t k : {1, 2, 100}) {
    r = scan_gpu(*dt, k, {}, {});
    EXPECT_EQ(r.items, reference(ties, k)) << k;
    EXPECT_EQ(has_note(r, "every object scored exactly"), k > 1) << k;
  }

  // Ties the filter keeps (around what one block sorts): ties by id.
  for (std::uint64_t tied : {std::uint64_t{2044}, std::uint64_t{2045}, std::uint64_t{5000}}) {
    std::vector<std::vector<float>> t(tied + 3, std::vector<float>(2, 0.25f));
    t[7] = {0.5f, 0.5f};
    const auto tl = topk_cases::from_scores(t);
    auto dtl = upload(tl);
    r = scan_gpu(*dtl, 100, {}, {});
    EXPECT_EQ(r.items, reference(tl, 100)) << tied;
    EXPECT_FALSE(has_note(r, "every object scored exactly")) << tied;
  }

  const auto big = Aggregate::parse("wsum:1e39,1,1,1", 4);
  r = scan_gpu(*d, 50, big, {});
  EXPECT_EQ(r.items, reference(l, 50, big));
  EXPECT_TRUE(has_note(r, "could overflow"));
}

// NRA in one launch: correlated lists of several sizes, 1..8 lists, every aggregate, k = 1, 100
// and m against the brute force (k = m: the host sorts the candidates, or, past the table's
// largest size, the other paths answer); sums always stop within its budget, and the report names
// the path that answered.
TEST(GpuTopk, OneLaunchNraMatchesBruteForceOnCorrelatedLists) {
  TANDEM_REQUIRE_GPU();
  const std::vector<std::uint64_t> sizes =
      sanitizer() ? std::vector<std::uint64_t>{1000, 3001} : std::vector<std::uint64_t>{1000, 20011, 200003, 1000003};
  for (std::uint64_t m : sizes)
    for (std::uint32_t n = 1; n <= 8; ++n) {
      SCOPED_TRACE(testing::Message() << "m=" << m << " n=" << n);
      const auto l = correlated(m, n, n);
      auto d = upload(l);
      ASSERT_TRUE(n == 1 || d->overlap().ratio() > 3.0) << d->overlap().ratio();
      std::vector<std::string> aggs{"sum"};
      if (n == 1 || n == 3 || n == 8 || m <= 3001) {
        std::string w = "wsum:";
        for (std::uint32_t i = 0; i < n; ++i) w += std::string(i ? "," : "") + (i % 3 == 1 ? "0" : "0.625");
        aggs.insert(aggs.end(), {"min", "max", w});
      }
      for (const auto& text : aggs) {
        const auto agg = Aggregate::parse(text, n);
        for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{100}, m}) {
          if (k > m) continue;
          SCOPED_TRACE(testing::Message() << text << " k=" << k);
          const auto r = nra_gpu(*d, k, agg, {});
          EXPECT_EQ(r.items, reference(l, k, agg)) << path(r);
          EXPECT_TRUE(r.stats.finished);
          EXPECT_EQ(r.stats.algo, "nra");
          const bool one = has_stage(r, kOneLaunch);
          if (k < m) {
            EXPECT_TRUE(one || has_note(r, kGaveUp)) << path(r);
          }
          if ((text == "sum" || n == 1) && k <= 100) {
            EXPECT_TRUE(one) << path(r);
          }
        }
      }
    }
}

// Ties everywhere (the answer is ids 0..k-1), signed zeros, candidates beyond what the samples
// rank directly (a tied head of thousands of objects) and k beyond what the device ranks (the
// host sorts the candidates): the CPU's answer, through NRA in one launch.
TEST(GpuTopk, OneLaunchNraTiesSignedZerosAndManyCandidates) {
  TANDEM_REQUIRE_GPU();
  {
    const std::uint64_t m = sanitizer() ? 5000 : 70001;
    const auto ties = topk_cases::from_scores(std::vector<std::vector<float>>(m, std::vector<float>(3, 0.5f)));
    auto d = upload(ties);
    for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{100}, std::uint64_t{1500}, m}) {
      const auto r = nra_gpu(*d, k, {}, {});
      EXPECT_EQ(r.items, reference(ties, k)) << k << path(r);
      EXPECT_TRUE(has_stage(r, kOneLaunch)) << k;
    }
  }
  {
    // Correlated lists whose lower half scores -0.0 or 0.0 (by id): the order is unchanged.
    const std::uint64_t m = sanitizer() ? 3001 : 100003;
    auto l = correlated(m, 4);
    for (auto& e : l.entries) e.score = e.score >= 0.5f ? e.score - 0.5f : (e.id % 2 ? -0.0f : 0.0f);
    validate(l);
    auto d = upload(l);
    for (const char* text : {"sum", "min", "max", "wsum:1,0,2,0.5"}) {
      const auto agg = Aggregate::parse(text, 4);
      for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{100}, m - 5, m}) {
        const auto r = nra_gpu(*d, k, agg, {});
        EXPECT_EQ(r.items, reference(l, k, agg)) << text << " k=" << k << path(r);
        EXPECT_TRUE(has_stage(r, kOneLaunch) || has_note(r, kGaveUp)) << text << " k=" << k;
      }
    }
  }
  {
    // A head of objects scoring 1 in every list above correlated ones: at the stop every head
    // object is a candidate (more than the 1024 samples); k inside the head.
    const std::uint64_t m = sanitizer() ? 20011 : 200003, head = sanitizer() ? 3000 : 20000;
    std::mt19937_64 rng(9);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<std::vector<float>> s(m, std::vector<float>(4, 1.0f));
    for (std::uint64_t o = head; o < m; ++o) {
      const float base = 0.9f * u(rng);
      for (auto& x : s[o]) x = base + 0.05f * u(rng);
    }
    const auto l = topk_cases::from_scores(s);
    auto d = upload(l);
    for (std::uint64_t k :
         {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{2999}, std::uint64_t{17000}, head + 50}) {
      if (k > m) continue;
      const auto r = nra_gpu(*d, k, {}, {});
      EXPECT_EQ(r.items, reference(l, k)) << k << path(r);
      if (k <= head) {
        EXPECT_TRUE(has_stage(r, kOneLaunch)) << k;
        EXPECT_GT(r.stats.candidates, 1024u) << k;
      }
    }
  }
}

// Correlated at the top, deep behind it: NRA in one launch gives up - its table fills up (its
// depth budget, at the small size) - with a note and a stage, and the other NRA paths answer
// exactly (sums: the float NRA; min: the exact rounds).
TEST(GpuTopk, OneLaunchNraGivesUpAndTheOtherPathsAnswer) {
  TANDEM_REQUIRE_GPU();
  const auto l = topk_cases::deep_behind_correlated_head(sanitizer() ? 20011 : 200003, 4, 1000, 5);
  auto d = upload(l);
  ASSERT_GT(d->overlap().ratio(), 3.0);
  for (const char* text : {"sum", "min", "wsum:1,2,0,1"}) {
    const auto agg = Aggregate::parse(text, 4);
    auto r = nra_gpu(*d, 1100, agg, {});
    EXPECT_EQ(r.items, reference(l, 1100, agg)) << text << path(r);
    EXPECT_TRUE(has_note(r, kGaveUp)) << text;
    if (!sanitizer()) {
      EXPECT_TRUE(has_note(r, "before its table")) << text;  // its table filled up
    }
    EXPECT_TRUE(has_stage(r, "NRA in one launch (gave up)")) << text;
    EXPECT_FALSE(has_stage(r, kOneLaunch)) << text;
    r = nra_gpu(*d, 100, agg, {});  // inside the head: one launch answers
    EXPECT_EQ(r.items, reference(l, 100, agg)) << text;
    EXPECT_TRUE(has_stage(r, kOneLaunch)) << text;
  }
  Options a;
  a.device = Device::gpu;
  auto r = query(*d, 1100, {}, a);  // auto: NRA (budget m/2), then the scan if it does not stop
  EXPECT_EQ(r.items, reference(l, 1100));
}

// Queries one after another on one upload: the one launch puts back every slot it used, so it,
// the host-driven rounds (a stride), the float NRA, TA and auto keep giving the CPU's answer, with
// aggregates of different identities in between; a depth cap inside its budget and a stride keep
// the host-driven rounds; managed memory and a single list of uniform scores take it too.
TEST(GpuTopk, OneLaunchNraKeepsTheStateCleanAndRespectsOptions) {
  TANDEM_REQUIRE_GPU();
  const std::uint64_t m = sanitizer() ? 3001 : 200003;
  const auto l = correlated(m, 4);
  auto d = upload(l);
  const auto sum = Aggregate{}, mn = Aggregate::parse("min", 4), mx = Aggregate::parse("max", 4);
  Options stride;
  stride.stride = 100;
  for (int rep = 0; rep < 3; ++rep) {
    SCOPED_TRACE(rep);
    auto r = nra_gpu(*d, 100, sum, {});
    EXPECT_EQ(r.items, reference(l, 100));
    EXPECT_TRUE(has_stage(r, kOneLaunch));
    EXPECT_EQ(nra_gpu(*d, 50, mn, {}).items, reference(l, 50, mn));
    r = nra_gpu(*d, 100, sum, stride);
    EXPECT_EQ(r.items, reference(l, 100));
    EXPECT_FALSE(has_stage(r, kOneLaunch));
    EXPECT_EQ(nra_gpu(*d, 10, mx, {}).items, reference(l, 10, mx));
    EXPECT_EQ(ta_gpu(*d, 100, sum, {}).items, reference(l, 100));
    r = query(*d, 100);  // auto: NRA with a budget of m/2, past the one launch's
    EXPECT_EQ(r.items, reference(l, 100));
    if (!sanitizer()) {  // at the small size the first round alone reads past m/2
      EXPECT_TRUE(has_stage(r, kOneLaunch));
    }
    EXPECT_EQ(nra_gpu(*d, 1, sum, {}).items, reference(l, 1));
  }
  Options capped;
  capped.max_depth = 10;  // inside the one launch's budget: the host-driven rounds, unfinished
  auto r = nra_gpu(*d, 100, sum, capped);
  EXPECT_FALSE(r.stats.finished);
  EXPECT_FALSE(has_stage(r, kOneLaunch));
  capped.max_depth = m;
  r = nra_gpu(*d, 100, sum, capped);
  EXPECT_EQ(r.items, reference(l, 100));
  EXPECT_TRUE(has_stage(r, kOneLaunch));

  auto dm = upload(l, Memory::managed);
  r = nra_gpu(*dm, 100, sum, {});
  EXPECT_EQ(r.items, reference(l, 100));
  EXPECT_TRUE(has_stage(r, kOneLaunch));

  GenOptions g;
  g.objects = m;
  g.lists = 1;
  const auto one = generate(g);
  auto d1 = upload(one);
  for (std::uint64_t k : {std::uint64_t{1}, std::uint64_t{100}, std::min<std::uint64_t>(m, 5000)}) {
    r = nra_gpu(*d1, k, {}, {});
    EXPECT_EQ(r.items, reference(one, k)) << k;
    EXPECT_TRUE(has_stage(r, kOneLaunch)) << k;
  }
}
