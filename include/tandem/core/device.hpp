// What this machine is: CPU topology (hwloc) and CUDA devices. Works with zero GPUs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tandem {

struct CacheLevel {
  int level{0};            // 1, 2, 3
  std::string kind;        // "data", "instruction", "unified"
  std::uint64_t bytes{0};  // size of one cache
  int count{0};            // how many of them
};

struct CpuInfo {
  std::string model;
  int packages{0};
  int physical_cores{0};
  int hardware_threads{0};
  int numa_nodes{0};
  std::uint64_t memory_bytes{0};
  std::vector<CacheLevel> caches;
  bool avx2{false};
  bool avx512{false};
};

struct GpuInfo {
  int index{0};
  std::string name;
  int cc_major{0};
  int cc_minor{0};
  int sms{0};
  std::uint64_t memory_bytes{0};
  std::uint64_t free_bytes{0};  // system_info() only (it needs a context per device); 0 from gpu_info()
  std::uint64_t l2_bytes{0};
  std::uint64_t shared_per_block_optin{0};
  std::uint64_t shared_per_sm{0};
  int regs_per_block{0};
  int max_threads_per_block{0};
  int max_threads_per_sm{0};
  int clock_khz{0};
  int memory_bus_bits{0};
  int pcie_generation{0};  // from NVML-free sources when known, else 0
  int pcie_width{0};
  std::string pci_bus_id;
  bool pageable_memory_access{false};  // cudaDevAttrPageableMemoryAccess
  bool concurrent_managed_access{false};
  int async_engines{0};

  std::string key() const;  // stable identifier for tuning caches: "NVIDIA H200/sm90/132"
};

struct SystemInfo {
  CpuInfo cpu;
  std::vector<GpuInfo> gpus;
  bool cuda_built{false};
  int cuda_runtime_version{0};  // e.g. 13000
  int cuda_driver_version{0};
  std::string cuda_status;  // why no GPU is usable, when none is
};

CpuInfo cpu_info();               // cached after the first call
std::vector<GpuInfo> gpu_info();  // empty without CUDA or without a usable device
int gpu_count();                  // usable CUDA devices (0 in CPU-only builds)
SystemInfo system_info();
std::string cpu_key();  // "model/Nc" identifier for tuning caches
// Bytes of memory this process could still allocate without swapping: MemAvailable of
// /proc/meminfo, lowered to the room left under a cgroup v2 memory.max; 0 when unknown.
std::uint64_t available_host_memory();
// A memory limit: `given` when set (> 0), else available_host_memory() / share_divisor, or 1 GiB
// when that cannot be read. The defaults of the group-by's spills and the sort's runs.
std::size_t memory_limit_or_share(std::size_t given, std::size_t share_divisor);

void to_json(nlohmann::json& j, const CacheLevel& c);
void to_json(nlohmann::json& j, const CpuInfo& c);
void to_json(nlohmann::json& j, const GpuInfo& g);
void to_json(nlohmann::json& j, const SystemInfo& s);
std::string describe(const SystemInfo& s);  // human-readable report

}  // namespace tandem
