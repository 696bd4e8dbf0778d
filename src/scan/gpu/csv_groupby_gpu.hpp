// A CSV file grouped on the GPU: the body read from the file straight into pinned slots and
// copied to device memory, parsed there (csv_device.hpp), strings ranked there
// (table/gpu/string_ranks.hpp), and the group-by run on the columns where they lie; a file over a
// quarter of the free device memory, standard input and pipes a piece at a time
// (csv_gpu_pieces.hpp). Where the device cannot take the file (a compressed file, a field only the
// CPU reader decides...) it returns nothing and notes why in `notes`: the caller then streams the
// file on the CPU, whose answer or error is the same.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/groupby.hpp"
#include "tandem/groupby_csv.hpp"

namespace tandem::scan {

// `columns`: the columns the group-by reads. NoDeviceError without a GPU or in a CPU-only build.
std::optional<GroupByResult> groupby_csv_on_gpu(const std::string& path, const std::vector<std::string>& columns,
                                                const GroupBySpec& spec, const GroupByCsvOptions& options,
                                                Report& notes);

}  // namespace tandem::scan
