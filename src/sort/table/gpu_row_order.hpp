// The row order of key columns in GPU memory (gpu_key_plan.hpp's passes, run with CUB's stable
// radix sort). Used for host tables (their key columns uploaded) and for device tables.
// CUDA builds only.
#pragma once
#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "tandem/cuda/buffers.hpp"
#include "tandem/table.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::detail {

// One key column on the device: `rows` values of `type` (str: u32 codes that sort as the strings
// do), validity bit i % 8 of byte i / 8 (nullptr: every row present).
struct DeviceKeyColumn {
  ColumnType type{ColumnType::i64};
  const void* values{nullptr};
  const std::uint8_t* validity{nullptr};
  bool descending{false};
};

struct DeviceRowOrder {
  gpu::DeviceBuffer<std::uint32_t> rows;  // input row indices in key order (stable)
  std::string passes;                     // "id3 17 bits, v1 35 bits" for the Report
};

// Fewer than 2^32 rows. `nan_missing`: a float NaN sorts as a missing value. Synchronises `stream`.
DeviceRowOrder device_row_order(std::span<const DeviceKeyColumn> keys, std::span<const std::string> names,
                                std::size_t rows, NullOrder nulls, bool nan_missing, cudaStream_t stream);

}  // namespace tandem::detail
#endif
