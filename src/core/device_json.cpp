// JSON and text views of the machine description.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tandem/core/device.hpp"
#include "tandem/core/format.hpp"

namespace tandem {

void to_json(nlohmann::json& j, const CacheLevel& c) {
  j = {{"level", c.level}, {"kind", c.kind}, {"bytes", c.bytes}, {"count", c.count}};
}

void to_json(nlohmann::json& j, const CpuInfo& c) {
  j = {{"model", c.model},
       {"packages", c.packages},
       {"physical_cores", c.physical_cores},
       {"hardware_threads", c.hardware_threads},
       {"numa_nodes", c.numa_nodes},
       {"memory_bytes", c.memory_bytes},
       {"caches", c.caches},
       {"avx2", c.avx2},
       {"avx512", c.avx512}};
}

void to_json(nlohmann::json& j, const GpuInfo& g) {
  j = {{"index", g.index},
       {"name", g.name},
       {"compute_capability", fmt::format("{}.{}", g.cc_major, g.cc_minor)},
       {"sms", g.sms},
       {"memory_bytes", g.memory_bytes},
       {"free_bytes", g.free_bytes},
       {"l2_bytes", g.l2_bytes},
       {"shared_per_block_optin", g.shared_per_block_optin},
       {"shared_per_sm", g.shared_per_sm},
       {"regs_per_block", g.regs_per_block},
       {"max_threads_per_block", g.max_threads_per_block},
       {"max_threads_per_sm", g.max_threads_per_sm},
       {"clock_khz", g.clock_khz},
       {"memory_bus_bits", g.memory_bus_bits},
       {"pci_bus_id", g.pci_bus_id},
       {"pcie_generation", g.pcie_generation},
       {"pcie_width", g.pcie_width},
       {"pageable_memory_access", g.pageable_memory_access},
       {"concurrent_managed_access", g.concurrent_managed_access},
       {"async_engines", g.async_engines}};
}

void to_json(nlohmann::json& j, const SystemInfo& s) {
  j = {{"cpu", s.cpu},
       {"gpus", s.gpus},
       {"cuda",
        {{"built", s.cuda_built},
         {"runtime_version", s.cuda_runtime_version},
         {"driver_version", s.cuda_driver_version},
         {"status", s.cuda_status}}}};
}

std::string describe(const SystemInfo& s) {
  std::string out;
  const auto& c = s.cpu;
  out += fmt::format("CPU   {}\n", c.model);
  out += fmt::format("      {} package(s), {} physical cores, {} hardware threads, {} NUMA node(s), {} memory\n",
                     c.packages, c.physical_cores, c.hardware_threads, c.numa_nodes, human_bytes(c.memory_bytes));
  for (const auto& l : c.caches)
    out += fmt::format("      L{} {:<11} {} x {}\n", l.level, l.kind, l.count, human_bytes(l.bytes));
  out += fmt::format("      SIMD: AVX2 {}, AVX-512 {}\n", c.avx2 ? "yes" : "no", c.avx512 ? "yes" : "no");
  if (s.cuda_built)
    out += fmt::format("CUDA  runtime {}.{}, driver {}.{}\n", s.cuda_runtime_version / 1000,
                       (s.cuda_runtime_version % 1000) / 10, s.cuda_driver_version / 1000,
                       (s.cuda_driver_version % 1000) / 10);
  if (s.gpus.empty()) out += fmt::format("GPU   none ({})\n", s.cuda_status);
  for (const auto& g : s.gpus) {
    out +=
        fmt::format("GPU {} {} (compute {}.{}), {} SMs, {} memory ({} free), L2 {}\n", g.index, g.name, g.cc_major,
                    g.cc_minor, g.sms, human_bytes(g.memory_bytes), human_bytes(g.free_bytes), human_bytes(g.l2_bytes));
    out += fmt::format("      PCIe {} gen {} x{}, {} copy engines, pageable memory access {}\n", g.pci_bus_id,
                       g.pcie_generation, g.pcie_width, g.async_engines, g.pageable_memory_access ? "yes" : "no");
  }
  return out;
}

}  // namespace tandem
