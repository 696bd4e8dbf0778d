// CPU affinity tuning for the bitonic CPU engine: when no more threads are asked
// for than there are physical cores, try mappings of the OpenMP threads onto processing units and
// keep the fastest. The candidates come from the machine's topology (hwloc): unbound, compact
// (consecutive PUs, SMT siblings together), scatter (packages, then cores, SMT siblings last), one
// thread per core, and threads spread in blocks over the NUMA nodes / packages.
//
// Candidate generation is a pure function of a CpuTopology (tested on made-up topologies); binding
// goes through hwloc_set_cpubind per OpenMP thread and is undone by the scope's destructor. Where
// the system refuses binding (containers, restricted cpusets), the scope reports why and leaves
// the threads as they were.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tandem::bitonic {

struct CpuTopology {
  struct Pu {
    int os{0};       // OS index (what sched_setaffinity calls the CPU number)
    int core{0};     // logical index of its core
    int package{0};  // logical index of its package
    int numa{0};     // logical index of its NUMA node
  };
  std::vector<Pu> pus;  // in hwloc's logical order (package, core, PU)
};

// The topology of this machine's allowed PUs (hwloc); empty when hwloc cannot load it.
CpuTopology cpu_topology();

// One mapping of `threads` OpenMP threads onto PUs: cpus[t] = the OS indices thread t may run on.
// An empty `cpus` means unbound (the "none" mapping).
struct AffinityMapping {
  std::string name;
  std::vector<std::vector<int>> cpus;
  bool bound() const { return !cpus.empty(); }
  std::string describe() const;  // "compact: 0 1 2 3" / "core: {0,16} {1,17}"
};

nlohmann::json to_json(const AffinityMapping& m);

// The candidate mappings for `threads` threads: "none" first, then compact, scatter, core,
// numa-spread, package-spread where the topology makes them distinct (duplicates dropped, e.g.
// compact = scatter = core on one package without SMT; no spreads on one NUMA node / package).
std::vector<AffinityMapping> affinity_candidates(const CpuTopology& topo, int threads);

// Binds OpenMP threads 0..threads-1 as `m` says for the lifetime of the scope (the pool threads
// keep the binding across parallel regions of the same size) and restores each thread's previous
// binding afterwards. ok() is false (and error() says why) when any thread could not be bound;
// the threads bound before the failure are restored at once.
class AffinityScope {
 public:
  AffinityScope(const AffinityMapping& m, int threads);
  ~AffinityScope();
  AffinityScope(const AffinityScope&) = delete;
  AffinityScope& operator=(const AffinityScope&) = delete;
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  void restore();
  struct Saved;
  std::vector<Saved>* saved_{nullptr};
  int threads_{0};
  std::string error_;
};

// The OS indices of the PUs the calling thread may run on (sched_getaffinity; empty on failure).
std::vector<int> thread_cpus();

}  // namespace tandem::bitonic
