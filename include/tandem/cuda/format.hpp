// "{}" formatting for CUDA sources and the headers they include: nvcc cannot compile fmt's
// headers here (fmt 9's compile-time format checks fail in its host pass), so .cu code formats
// its messages with this instead of fmt::format.
#pragma once
#include <sstream>
#include <string>
#include <string_view>

namespace tandem::gpu {

// Replaces each "{}" of f with the next argument, written with operator<<. No format
// specifications; surplus "{}" stay as they are.
template <class... A>
std::string format(std::string_view f, const A&... a) {
  std::ostringstream os;
  std::size_t pos = 0;
  [[maybe_unused]] auto one = [&](const auto& x) {
    const std::size_t at = f.find("{}", pos);
    if (at == std::string_view::npos) return;
    os << f.substr(pos, at - pos) << x;
    pos = at + 2;
  };
  (one(a), ...);
  os << f.substr(pos);
  return os.str();
}

}  // namespace tandem::gpu
