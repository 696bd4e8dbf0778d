#include "tandem/parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tandem/device.hpp"

namespace tandem {

int default_threads() {
  if (const char* env = std::getenv("TANDEM_THREADS"); env && std::atoi(env) > 0) return std::atoi(env);
  return std::max(1, cpu_info().physical_cores);
}

void parallel_copy(void* dst, const void* src, std::size_t bytes, int threads) {
  if (threads <= 0) threads = default_threads();
  // Below ~1 MiB a single memcpy beats waking a thread team.
  if (threads == 1 || bytes < (1u << 20)) {
    if (bytes) std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t piece = ((bytes + threads - 1) / threads + 63) & ~std::size_t{63};
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const std::size_t begin = std::min(bytes, piece * static_cast<std::size_t>(t));
    const std::size_t end = std::min(bytes, begin + piece);
    if (end > begin)
      std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

}  // namespace tandem
