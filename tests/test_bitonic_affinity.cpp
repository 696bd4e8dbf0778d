// CPU affinity tuning of the bitonic engine: candidate mappings from made-up
// topologies (pure), binding on this machine (which may refuse it: the scope must then say why
// and leave the threads as they were), and a sort that tunes the mapping.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/device.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/sort/bitonic_affinity.hpp"

using namespace tandem;
using namespace tandem::bitonic;

namespace {

// packages x cores x SMT, Linux-style OS numbering (SMT siblings os and os + cores in all),
// one NUMA node per package.
CpuTopology make_topology(int packages, int cores_per_package, int smt) {
  CpuTopology t;
  const int cores = packages * cores_per_package;
  for (int p = 0; p < packages; ++p)
    for (int c = 0; c < cores_per_package; ++c)
      for (int s = 0; s < smt; ++s) {
        const int core = p * cores_per_package + c;
        t.pus.push_back({core + s * cores, core, p, p});
      }
  return t;
}

std::vector<std::string> names(const std::vector<AffinityMapping>& v) {
  std::vector<std::string> out;
  for (const auto& m : v) out.push_back(m.name);
  return out;
}

const AffinityMapping& find(const std::vector<AffinityMapping>& v, const std::string& name) {
  for (const auto& m : v)
    if (m.name == name) return m;
  throw std::runtime_error("no mapping " + name);
}

using Cpus = std::vector<std::vector<int>>;

}  // namespace

TEST(BitonicAffinity, CandidatesOnTwoPackagesWithSmt) {
  const auto t = make_topology(2, 2, 2);  // cores {0,4} {1,5} | {2,6} {3,7}
  const auto c = affinity_candidates(t, 4);
  // package-spread equals numa-spread here (one node per package) and is dropped.
  EXPECT_EQ(names(c), (std::vector<std::string>{"none", "compact", "scatter", "core", "numa-spread"}));
  EXPECT_FALSE(c[0].bound());
  EXPECT_EQ(find(c, "compact").cpus, (Cpus{{0}, {4}, {1}, {5}}));  // SMT siblings together
  EXPECT_EQ(find(c, "scatter").cpus, (Cpus{{0}, {2}, {1}, {3}}));  // packages, then cores
  EXPECT_EQ(find(c, "core").cpus, (Cpus{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(find(c, "numa-spread").cpus, (Cpus{{0, 4, 1, 5}, {0, 4, 1, 5}, {2, 6, 3, 7}, {2, 6, 3, 7}}));
  EXPECT_EQ(find(c, "scatter").describe(), "scatter: 0 2 1 3");
}

TEST(BitonicAffinity, CandidatesOnOnePackageWithoutSmt) {
  // The CI machine's shape: compact, scatter and core coincide; no spreads.
  const auto c = affinity_candidates(make_topology(1, 2, 1), 2);
  EXPECT_EQ(names(c), (std::vector<std::string>{"none", "compact"}));
  EXPECT_EQ(c[1].cpus, (Cpus{{0}, {1}}));
}

TEST(BitonicAffinity, CandidatesWrapAndDegenerate) {
  // More threads than PUs wrap around; no topology or no threads: unbound only.
  const auto c = affinity_candidates(make_topology(1, 2, 1), 5);
  EXPECT_EQ(find(c, "compact").cpus, (Cpus{{0}, {1}, {0}, {1}, {0}}));
  EXPECT_EQ(names(affinity_candidates(CpuTopology{}, 4)), std::vector<std::string>{"none"});
  EXPECT_EQ(names(affinity_candidates(make_topology(2, 2, 2), 0)), std::vector<std::string>{"none"});
  // Packages without separate NUMA nodes: a package spread, no NUMA spread.
  auto t = make_topology(2, 2, 1);  // cores 0 1 | 2 3
  for (auto& p : t.pus) p.numa = 0;
  const auto s = affinity_candidates(t, 2);
  EXPECT_EQ(names(s), (std::vector<std::string>{"none", "compact", "scatter", "package-spread"}));
  EXPECT_EQ(find(s, "package-spread").cpus, (Cpus{{0, 1}, {2, 3}}));
}

TEST(BitonicAffinity, TopologyOfThisMachine) {
  const auto t = cpu_topology();
  ASSERT_FALSE(t.pus.empty());
  std::set<int> os;
  for (const auto& p : t.pus) os.insert(p.os);
  EXPECT_EQ(os.size(), t.pus.size());  // distinct PUs
  // Every candidate binds only PUs of the topology.
  for (const auto& m : affinity_candidates(t, 2))
    for (const auto& cpus : m.cpus)
      for (int c : cpus) EXPECT_TRUE(os.count(c)) << m.describe();
}

TEST(BitonicAffinity, BindingAppliesAndRestoresOrSaysWhy) {
  const std::vector<int> before = thread_cpus();
  ASSERT_FALSE(before.empty());
  for (const auto& m : affinity_candidates(cpu_topology(), 2)) {
    SCOPED_TRACE(m.describe());
    {
      const AffinityScope scope(m, 2);
      if (!scope.ok()) {
        EXPECT_FALSE(scope.error().empty());  // refused (e.g. in a container): said why
      } else if (m.bound()) {
        std::set<int> allowed;
        for (const auto& c : m.cpus) allowed.insert(c.begin(), c.end());
        std::mutex mu;
        std::vector<std::vector<int>> seen;
#pragma omp parallel num_threads(2)
        {
          auto mine = thread_cpus();
          std::lock_guard<std::mutex> lock(mu);
          seen.push_back(mine);
        }
        for (const auto& s : seen)
          for (int c : s) EXPECT_TRUE(allowed.count(c)) << "thread runs on CPU " << c << " outside the mapping";
      }
    }
    EXPECT_EQ(thread_cpus(), before) << "the calling thread's binding was not restored";
  }
}

TEST(BitonicAffinity, RefusedBindingLeavesThreadsAlone) {
  // A CPU that does not exist: the bind fails, the scope says why, nothing changes.
  const std::vector<int> before = thread_cpus();
  {
    const AffinityScope scope(AffinityMapping{"bogus", {{1 << 20}, {1 << 20}}}, 2);
    EXPECT_FALSE(scope.ok());
    EXPECT_FALSE(scope.error().empty());
    EXPECT_EQ(thread_cpus(), before);
  }
  EXPECT_EQ(thread_cpus(), before);
}

TEST(BitonicAffinity, SortTunesTheMappingAndExplainsIt) {
  const int threads = 2;
  std::mt19937_64 rng(17);
  std::vector<std::uint32_t> keys((1u << 17) + 321);
  for (auto& k : keys) k = std::uint32_t(rng());
  auto want = keys;
  std::sort(want.begin(), want.end());
  SortOptions o;
  o.device = Device::cpu;
  o.threads = threads;
  const std::vector<int> before = thread_cpus();
  const Report r = bitonic::sort(std::span<std::uint32_t>(keys), o);
  EXPECT_EQ(keys, want);
  EXPECT_EQ(thread_cpus(), before);
  ASSERT_TRUE(r.details().contains("cpu_affinity"));
  const bool tunable = cpu_info().physical_cores >= threads && affinity_candidates(cpu_topology(), threads).size() >= 2;
  bool explained = false;
  for (const auto& n : r.notes) explained = explained || n.rfind("CPU affinity", 0) == 0;
  EXPECT_EQ(explained, tunable) << r.explain();
}
