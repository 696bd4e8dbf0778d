// Strings in GPU memory ranked on the GPU: each row gets the rank of its string among the
// column's distinct strings in byte order (codes that sort as the strings do, as the CPU
// dictionary's), and the distinct strings come back to the host in that order for decoding.
//
// Distinct strings are found by a hash table whose slots hold (32 bits of hash | first row);
// equal hashes are always confirmed by comparing the bytes, so no answer rests on a hash. The
// distinct strings are then sorted by a least-significant-first radix sort of their 8-byte
// big-endian words (one CUB pass per word, stable), so the work is the distinct count times the
// longest string's words, not the row count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tandem/table.hpp"

#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

#endif

namespace tandem::table_gpu {

// Distinct strings in ascending byte order, in host memory: string k is bytes[offsets[k], offsets[k + 1]).
struct SortedStrings {
  std::vector<std::uint64_t> offsets{0};
  std::vector<char> bytes;
  std::size_t size() const { return offsets.size() - 1; }
  std::string_view operator[](std::size_t k) const {
    return {bytes.data() + offsets[k], static_cast<std::size_t>(offsets[k + 1] - offsets[k])};
  }
};

// The most rows rank_strings takes (row numbers and table slots are 32-bit).
inline constexpr std::size_t kMaxRankedRows = std::size_t{1} << 30;

#if TANDEM_HAS_CUDA
// A string column in device memory: row i is bytes[offsets[i], offsets[i + 1]); validity bit
// i % 8 of byte i / 8 (nullptr: every row present).
struct DeviceStrings {
  const std::uint64_t* offsets{nullptr};
  const char* bytes{nullptr};
  const std::uint8_t* validity{nullptr};
  std::size_t rows{0};
};

// Ranks the strings on the current device, on `stream` (synchronised before returning): codes[i]
// (device memory of strings.rows values) gets row i's rank, a missing row the distinct count.
// Returns the distinct strings in order; std::nullopt when the column has more than
// kMaxRankedRows rows (the caller ranks on the CPU).
std::optional<SortedStrings> rank_strings(const DeviceStrings& strings, std::uint32_t* codes, cudaStream_t stream);

// A host string column ranked on the current device: its offsets and bytes copied there (staged
// through pinned memory) and ranked as rank_strings does. `validity`: the column's bitmap in
// device memory (nullptr: every row present); codes: device memory of c.length values.
// std::nullopt beyond kMaxRankedRows rows.
std::optional<SortedStrings> rank_host_strings(const Column& c, const std::uint8_t* validity, std::uint32_t* codes,
                                               cudaStream_t stream);
#endif

}  // namespace tandem::table_gpu
