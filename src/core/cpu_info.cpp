// CPU topology through hwloc; the x86 feature bits through the compiler's cpuid helpers.
#include <hwloc.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "tandem/core/device.hpp"

namespace tandem {
namespace {

std::string read_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  }
  return "unknown CPU";
}

int count_type(hwloc_topology_t t, hwloc_obj_type_t type) {
  int n = hwloc_get_nbobjs_by_type(t, type);
  return n < 0 ? 0 : n;
}

CpuInfo probe() {
  CpuInfo c;
  c.model = read_model_name();
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  c.avx2 = __builtin_cpu_supports("avx2");
  c.avx512 = __builtin_cpu_supports("avx512f");
#endif
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    c.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
    c.physical_cores = c.hardware_threads;
    c.packages = 1;
    c.numa_nodes = 1;
    return c;
  }
  c.packages = std::max(1, count_type(topo, HWLOC_OBJ_PACKAGE));
  c.physical_cores = std::max(1, count_type(topo, HWLOC_OBJ_CORE));
  c.hardware_threads = std::max(1, count_type(topo, HWLOC_OBJ_PU));
  c.numa_nodes = std::max(1, count_type(topo, HWLOC_OBJ_NUMANODE));
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  c.memory_bytes = root->total_memory;
  std::map<std::pair<int, std::string>, CacheLevel> caches;
  for (hwloc_obj_type_t type : {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L1ICACHE}) {
    const int n = count_type(topo, type);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t o = hwloc_get_obj_by_type(topo, type, static_cast<unsigned>(i));
      if (!o || !o->attr) continue;
      const auto& ca = o->attr->cache;
      std::string kind = ca.type == HWLOC_OBJ_CACHE_DATA          ? "data"
                         : ca.type == HWLOC_OBJ_CACHE_INSTRUCTION ? "instruction"
                                                                  : "unified";
      auto& e = caches[{static_cast<int>(ca.depth), kind}];
      e.level = static_cast<int>(ca.depth);
      e.kind = kind;
      e.bytes = ca.size;
      e.count += 1;
    }
  }
  for (auto& [k, v] : caches) c.caches.push_back(v);
  hwloc_topology_destroy(topo);
  return c;
}

}  // namespace

CpuInfo cpu_info() {
  static std::once_flag once;
  static CpuInfo info;
  std::call_once(once, [] { info = probe(); });
  return info;
}

namespace {

// The number after `key` in a file of "key value" lines (kB units for /proc/meminfo), or 0.
std::uint64_t read_field(const char* path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  std::uint64_t v = 0;
  while (in >> k >> v) {
    if (k == key) return v;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

// Room under a cgroup v2 limit of this process's view ("max": none), or 0 when there is none.
std::uint64_t cgroup_room() {
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), current_file("/sys/fs/cgroup/memory.current");
  std::uint64_t max = 0, current = 0;
  if (!(max_file >> max) || !(current_file >> current)) return 0;  // no limit, or no cgroup v2
  return max > current ? max - current : 1;
}

}  // namespace

std::uint64_t available_host_memory() {
  std::uint64_t bytes = read_field("/proc/meminfo", "MemAvailable:") * 1024;
  if (const std::uint64_t room = cgroup_room(); room > 0) bytes = bytes == 0 ? room : std::min(bytes, room);
  return bytes;
}

std::size_t memory_limit_or_share(std::size_t given, std::size_t share_divisor) {
  if (given > 0) return given;
  const std::uint64_t available = available_host_memory();
  return available > 0 ? static_cast<std::size_t>(available / share_divisor) : std::size_t{1} << 30;
}

std::string cpu_key() {
  const CpuInfo c = cpu_info();
  return c.model + "/" + std::to_string(c.physical_cores) + "c";
}

}  // namespace tandem
