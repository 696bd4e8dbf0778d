// The tuning-cache loader (TuningCache) and the library code that reads its entries.
//
// Each input is the cache file. The target points the process-wide cache at it and runs a CPU
// bitonic sort with more threads than physical cores, which looks up the tuned thread count in
// the cache (entry "bitonic.cpu_threads|<cpu key>|u32/2^10") and re-measures and writes the entry
// when it is missing or unusable. The placeholder @CPU@ in an input stands for this machine's
// cpu_key(), so one corpus reaches the lookup on every machine. A cache file, however broken, may
// cost a re-measurement or a tandem::Error, never another exception or a wrong sort.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "harness.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/sort/bitonic.hpp"

namespace {

using namespace tandem;
constexpr std::size_t kKeys = 1024;  // the entry's size class, u32/2^10

std::string with_cpu_key(std::string text) {
  static const std::string key = cpu_key();
  for (std::size_t at = 0; (at = text.find("@CPU@", at)) != std::string::npos; at += key.size())
    text.replace(at, 5, key);
  return text;
}

void sort_with_the_cache() {
  std::vector<std::uint32_t> keys(kKeys);
  std::uint32_t x = 12345;
  for (auto& k : keys) k = x = x * 1664525u + 1013904223u;
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = Device::cpu;
  o.threads = std::max(1, cpu_info().physical_cores) + 1;
  bitonic::sort(std::span<std::uint32_t>(keys), o);
  fuzz::check(std::is_sorted(keys.begin(), keys.end()), "the bitonic sort returned unsorted keys");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Nothing may touch the user's own cache.
  ::setenv("XDG_CACHE_HOME", fuzz::scratch_dir().c_str(), 1);
  std::filesystem::create_directories(fuzz::scratch_dir() / "tandem");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = with_cpu_key(std::string(reinterpret_cast<const char*>(data), size));
  const std::string path =
      fuzz::write_input("tandem/tuning.json", reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
  // The global cache reads its file (at `path`, under XDG_CACHE_HOME) afresh for this input.
  (void)path;
  TuningCache::global().reload();
  fuzz::expect_tandem_errors_only("the bitonic sort reading the tuning cache", sort_with_the_cache);
  return 0;
}
