// table_gpu::rank_host_strings (string_ranks.hpp): a host column's strings copied and ranked.
#if TANDEM_HAS_CUDA
#include "table/gpu/string_ranks.hpp"
#include "tandem/cuda/to_device.hpp"

namespace tandem::table_gpu {

std::optional<SortedStrings> rank_host_strings(const Column& c, const std::uint8_t* validity, std::uint32_t* codes,
                                               cudaStream_t stream) {
  if (c.length > kMaxRankedRows) return std::nullopt;
  const auto offsets = c.string_offsets();
  const auto d_offsets = gpu::to_device<std::uint64_t>(offsets.data(), offsets.size());
  const auto d_bytes = gpu::to_device<char>(c.values.data(), offsets.back());
  return rank_strings({d_offsets.data(), d_bytes.data(), validity, c.length}, codes, stream);
}

}  // namespace tandem::table_gpu
#endif
