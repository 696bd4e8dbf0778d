// Small formatting helpers shared by reports and the CLI.
#pragma once
#include <cstdint>
#include <string>

namespace tandem {

std::string human_bytes(std::uint64_t bytes);                 // "1.0 GiB"
std::string human_seconds(double seconds);                    // "12.3 ms"
std::string human_rate(double per_second, const char* unit);  // "35.2 GB/s" style (SI)

}  // namespace tandem
