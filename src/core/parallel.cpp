#include "tandem/core/parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"

namespace tandem {

namespace {

// Text from the environment for a message: printable ASCII, at most 40 characters.
std::string printable_excerpt(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 40; ++i) out.push_back(s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?');
  if (s.size() > 40) out += "...";
  return out;
}

// TANDEM_THREADS, checked as --threads is: an integer from 1 to kMaxThreads (0 when unset or empty).
int threads_from_environment() {
  const char* env = std::getenv("TANDEM_THREADS");
  if (!env || !*env) return 0;
  const std::string_view text(env);
  int v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < 1 || v > kMaxThreads)
    throw UsageError(fmt::format("TANDEM_THREADS: must be an integer from 1 to {} (got '{}')", kMaxThreads,
                                 printable_excerpt(text)));
  return v;
}

}  // namespace

void check_thread_environment() { (void)threads_from_environment(); }

int default_threads() {
  if (const int env = threads_from_environment()) return env;
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
