// The row order of a host table found on the GPU: the key columns uploaded (numbers and validity
// as they are; strings' offsets and bytes, ranked on the GPU into codes that sort as the strings
// do), gpu_row_order's passes there, and the order copied back for the host's gather.
// Internal to src/sort/table.
#pragma once
#include <cstddef>
#include <optional>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/table.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::detail {

// Where `device` (auto: a GPU is present and the table has at least kGpuTableSortMinRows rows)
// sends a table sort.
inline constexpr std::size_t kGpuTableSortMinRows = std::size_t{1} << 22;
bool table_sort_on_gpu(Device device, std::size_t rows);

// Input rows in key order (the first `spec.limit` when set). std::nullopt, with a note in the
// report, when the GPU cannot take the table (2^30 rows or more with a string key, too little
// device memory): the caller sorts on the CPU. NoDeviceError without a GPU or CUDA build.
std::optional<std::vector<std::size_t>> gpu_row_order(const Table& table, const SortSpec& spec,
                                                      const TableSortOptions& options, Report& report);

}  // namespace tandem::detail
