// Affinity candidates from a topology (pure) and their binding through hwloc, per OpenMP thread.
#include "tandem/sort/bitonic_affinity.hpp"

#include <hwloc.h>
#include <omp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "tandem/core/parallel.hpp"

namespace tandem::bitonic {
namespace {

// One process-wide topology for binding; loaded on first use, kept for the process's lifetime.
hwloc_topology_t topology() {
  static std::once_flag once;
  static hwloc_topology_t topo = nullptr;
  std::call_once(once, [] {
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0) return;
    if (hwloc_topology_load(t) != 0) {
      hwloc_topology_destroy(t);
      return;
    }
    topo = t;
  });
  return topo;
}

long os_thread_id() { return static_cast<long>(::syscall(SYS_gettid)); }

std::vector<int> bitmap_list(hwloc_const_bitmap_t b) {
  std::vector<int> out;
  unsigned i;
  hwloc_bitmap_foreach_begin(i, b) out.push_back(int(i));
  hwloc_bitmap_foreach_end();
  return out;
}

// Binds the calling thread to `cpus`; "" on success, else why not.
std::string bind_this_thread(hwloc_topology_t topo, const std::vector<int>& cpus) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int c : cpus) hwloc_bitmap_set(set, unsigned(c));
  std::string err;
  if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD) != 0)
    err = fmt::format("hwloc_set_cpubind to {{{}}} failed: {}", fmt::join(cpus, ","), std::strerror(errno));
  hwloc_bitmap_free(set);
  return err;
}

// Threads spread in contiguous blocks over the groups (NUMA nodes or packages), each bound to
// its whole group.
AffinityMapping spread(const std::string& name, const std::vector<std::vector<int>>& groups, int threads) {
  AffinityMapping m{name, {}};
  const int g = int(groups.size());
  for (int t = 0; t < threads; ++t) m.cpus.push_back(groups[std::size_t(t) * g / threads]);
  return m;
}

}  // namespace

struct AffinityScope::Saved {
  long tid{0};
  std::vector<int> cpus;
};

CpuTopology cpu_topology() {
  CpuTopology out;
  hwloc_topology_t topo = topology();
  if (!topo) return out;
  const int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  const int nnuma = std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
  for (int i = 0; i < npu; ++i) {
    hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, unsigned(i));
    if (!pu) continue;
    CpuTopology::Pu p;
    p.os = int(pu->os_index);
    hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu);
    p.core = core ? int(core->logical_index) : i;  // no core level: every PU is its own core
    p.package = pkg ? int(pkg->logical_index) : 0;
    for (int n = 0; n < nnuma; ++n) {
      hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, unsigned(n));
      if (node && node->cpuset && hwloc_bitmap_isset(node->cpuset, pu->os_index)) {
        p.numa = int(node->logical_index);
        break;
      }
    }
    out.pus.push_back(p);
  }
  return out;
}

std::string AffinityMapping::describe() const {
  if (!bound()) return name + ": unbound";
  std::string s = name + ":";
  for (const auto& c : cpus) s += c.size() == 1 ? fmt::format(" {}", c[0]) : fmt::format(" {{{}}}", fmt::join(c, ","));
  return s;
}

nlohmann::json to_json(const AffinityMapping& m) { return {{"name", m.name}, {"cpus", m.cpus}}; }

std::vector<AffinityMapping> affinity_candidates(const CpuTopology& topo, int threads) {
  std::vector<AffinityMapping> out{{"none", {}}};
  const int npu = int(topo.pus.size());
  if (threads < 1 || npu == 0) return out;
  auto add = [&](AffinityMapping m) {
    for (const auto& o : out)
      if (o.cpus == m.cpus) return;
    out.push_back(std::move(m));
  };
  // compact: consecutive PUs in logical order (SMT siblings of a core next to each other).
  AffinityMapping compact{"compact", {}};
  for (int t = 0; t < threads; ++t) compact.cpus.push_back({topo.pus[t % npu].os});
  add(compact);
  // scatter: first PU of every core across packages, then the second PUs, ...: consecutive
  // threads land on different packages, then different cores; SMT siblings are used last.
  std::map<int, int> smt_rank, core_rank;  // PU index -> rank in its core; core -> rank in its package
  std::map<int, int> seen_in_core;
  std::map<int, std::set<int>> cores_of_package;
  for (int i = 0; i < npu; ++i) {
    smt_rank[i] = seen_in_core[topo.pus[i].core]++;
    cores_of_package[topo.pus[i].package].insert(topo.pus[i].core);
  }
  for (const auto& [pkg, cores] : cores_of_package) {
    int r = 0;
    for (int c : cores) core_rank[c] = r++;
  }
  std::vector<int> order(npu);
  for (int i = 0; i < npu; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const auto& pa = topo.pus[a];
    const auto& pb = topo.pus[b];
    return std::tuple(smt_rank[a], core_rank[pa.core], pa.package) <
           std::tuple(smt_rank[b], core_rank[pb.core], pb.package);
  });
  AffinityMapping scatter{"scatter", {}};
  for (int t = 0; t < threads; ++t) scatter.cpus.push_back({topo.pus[order[t % npu]].os});
  add(scatter);
  // core: one thread per core, free to use any of its PUs.
  std::map<int, std::vector<int>> core_pus, numa_pus, pkg_pus;
  for (const auto& p : topo.pus) {
    core_pus[p.core].push_back(p.os);
    numa_pus[p.numa].push_back(p.os);
    pkg_pus[p.package].push_back(p.os);
  }
  AffinityMapping per_core{"core", {}};
  std::vector<std::vector<int>> cores;
  for (auto& [c, v] : core_pus) cores.push_back(v);
  for (int t = 0; t < threads; ++t) per_core.cpus.push_back(cores[t % cores.size()]);
  add(per_core);
  // Spreads over NUMA nodes and packages (only where there are several).
  auto groups = [](const std::map<int, std::vector<int>>& g) {
    std::vector<std::vector<int>> v;
    for (const auto& [k, pus] : g) v.push_back(pus);
    return v;
  };
  if (numa_pus.size() > 1) add(spread("numa-spread", groups(numa_pus), threads));
  if (pkg_pus.size() > 1) add(spread("package-spread", groups(pkg_pus), threads));
  return out;
}

AffinityScope::AffinityScope(const AffinityMapping& m, int threads) : threads_(threads) {
  if (!m.bound() || threads < 1) return;
  hwloc_topology_t topo = topology();
  if (!topo) {
    error_ = "hwloc topology unavailable";
    return;
  }
  saved_ = new std::vector<Saved>();
  std::mutex mu;
  parallel_region(threads, [&](int t, int) {
    Saved s{os_thread_id(), {}};
    hwloc_bitmap_t old = hwloc_bitmap_alloc();
    std::string err;
    if (hwloc_get_cpubind(topo, old, HWLOC_CPUBIND_THREAD) != 0)
      err = fmt::format("hwloc_get_cpubind failed: {}", std::strerror(errno));
    else s.cpus = bitmap_list(old);
    hwloc_bitmap_free(old);
    if (err.empty()) err = bind_this_thread(topo, m.cpus[std::size_t(t) % m.cpus.size()]);
    std::lock_guard<std::mutex> lock(mu);
    if (err.empty()) saved_->push_back(std::move(s));
    else if (error_.empty()) error_ = fmt::format("thread {}: {}", t, err);
  });
  if (!error_.empty()) restore();
}

AffinityScope::~AffinityScope() { restore(); }

void AffinityScope::restore() {
  if (!saved_) return;
  hwloc_topology_t topo = topology();
  const auto* saved = saved_;
  // Each thread of a team of the same size restores its own previous binding (found by OS
  // thread id: libgomp reuses its pool threads, but a thread not found is left alone).
  FirstException ignored;  // best effort (a destructor calls this): a failed rebinding is dropped
#pragma omp parallel num_threads(threads_)
  ignored.run([&] {
    const long me = os_thread_id();
    for (const auto& s : *saved)
      if (s.tid == me && !s.cpus.empty()) (void)bind_this_thread(topo, s.cpus);
  });
  delete saved_;
  saved_ = nullptr;
}

std::vector<int> thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

}  // namespace tandem::bitonic
