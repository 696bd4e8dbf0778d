#include "tandem/core/parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "tandem/core/device.hpp"

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
  // Four pieces per thread, handed out dynamically: a thread that loses its core for a moment
  // (the CUDA driver, another process) delays one small piece, not a 1/threads share of the copy.
  const std::size_t pieces = static_cast<std::size_t>(threads) * 4;
  const std::size_t piece =
      std::max<std::size_t>(std::size_t{64} << 10, ((bytes + pieces - 1) / pieces + 4095) & ~std::size_t{4095});
  const std::size_t count = (bytes + piece - 1) / piece;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t begin = piece * i;
    const std::size_t end = std::min(bytes, begin + piece);
    std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, end - begin);
  }
}

}  // namespace tandem
