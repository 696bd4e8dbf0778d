// Range checks for the numeric options of every command.
#pragma once
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>
#include <type_traits>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

namespace tandem::cli {

// The most CPU threads any --threads accepts (OpenMP fails beyond what the system can create).
inline constexpr int kMaxThreads = 4096;

// Validator for a numeric option: its text must be a plain number in [lo, hi], with no sign on an
// unsigned option, no nan or inf, and nothing after it. Anything else is a usage error (exit 2)
// that CLI11 reports as "--name: must be ...".
template <class T>
CLI::Validator in_range(T lo, T hi) {
  static_assert(std::is_arithmetic_v<T>);
  const std::string kind = std::is_floating_point_v<T> ? "a finite number" : "an integer";
  auto check = [lo, hi, kind](std::string& text) -> std::string {
    T v{};
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    bool ok = ec == std::errc() && ptr == end && !text.empty();
    if constexpr (std::is_floating_point_v<T>) ok = ok && std::isfinite(v);
    if (ok && v >= lo && v <= hi) return {};
    return fmt::format("must be {} from {} to {} (got '{}')", kind, lo, hi, text);
  };
  return CLI::Validator(check, fmt::format("{}..{}", lo, hi));
}

}  // namespace tandem::cli
