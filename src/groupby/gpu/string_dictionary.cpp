// Decoding the codes of strings ranked on the GPU.
#if TANDEM_HAS_CUDA
#include "groupby/gpu/string_dictionary.hpp"

#include <fmt/format.h>

#include <optional>

#include "groupby/cpu_output.hpp"

namespace tandem::gpu_groupby {

SortedStringDictionary::SortedStringDictionary(std::string name, table_gpu::SortedStrings sorted, bool any_missing)
    : name_(std::move(name)), sorted_(std::move(sorted)) {
  card = sorted_.size() + (any_missing ? 1 : 0);
}

Column SortedStringDictionary::decode(std::span<const std::uint32_t> codes, int threads) const {
  return cpu_groupby::build_column<std::string_view>(name_, codes.size(), threads,
                                                     [&](std::size_t i) -> std::optional<std::string_view> {
                                                       if (codes[i] >= sorted_.size()) return std::nullopt;
                                                       return sorted_[codes[i]];
                                                     });
}

std::string SortedStringDictionary::how() const {
  return fmt::format("{} distinct, ranked on the GPU", sorted_.size());
}

}  // namespace tandem::gpu_groupby

#endif  // TANDEM_HAS_CUDA
