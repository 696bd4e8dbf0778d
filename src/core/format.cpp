#include "tandem/core/format.hpp"

#include <cmath>

#include <fmt/format.h>

namespace tandem {

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string human_seconds(double s) {
  if (s < 1e-6) return fmt::format("{:.0f} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

std::string human_rate(double per_second, const char* unit) {
  const char* prefix[] = {"", "K", "M", "G", "T"};
  int p = 0;
  while (std::fabs(per_second) >= 1000 && p < 4) {
    per_second /= 1000;
    ++p;
  }
  return fmt::format("{:.2f} {}{}/s", per_second, prefix[p], unit);
}

}  // namespace tandem
