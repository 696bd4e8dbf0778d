// Inside the GPU CSV group-by (csv_groupby_gpu.cpp): parsed columns as a device table, and the
// group-by of a file read into the GPU a piece at a time.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/groupby.hpp"
#include "tandem/groupby_csv.hpp"

#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include "scan/gpu/csv_device.hpp"
#include "tandem/device_table.hpp"

namespace tandem::scan {

inline constexpr std::size_t kHeaderBytes = std::size_t{1} << 20;  // the header must end within the first MiB
// Device memory a parse needs per byte of CSV: the text, the row and field positions, the columns.
inline constexpr std::size_t kDeviceBytesPerCsvByte = 4;

// The parsed columns as a device table's: numbers as parsed, strings ranked on the device.
// std::nullopt where the strings are too many for the device ranking.
std::optional<DeviceTable> device_table_of(DeviceCsv&& parsed, int threads, cudaStream_t stream);

// A file larger than the device takes at once, or a stream (standard input, a pipe): its body read
// a piece at a time (options.gpu_piece_bytes, or a share of the GPU's free memory), each piece cut
// after its last complete row, parsed and grouped on the GPU into partial groups (a mean as a
// sum and a count), and the partial groups of every piece combined by the CPU's group-by sink
// (which spills past options.memory_limit). The first piece's types hold for the file: a later
// piece whose values need a wider type, a field only the CPU reader decides, aggregations that do
// not combine (median, quantile, nunique, top, var, std, first, last) or a row longer than a piece
// end the GPU path: a sized file then streams on the CPU from its start (std::nullopt and a note);
// a stream cannot be read again, so that is an InputError naming it, the byte and the reason
// (aggregations that do not combine are known before the stream is read, and stream on the CPU).
std::optional<GroupByResult> groupby_csv_gpu_pieces(const std::string& path, const std::vector<std::string>& columns,
                                                    const GroupBySpec& spec, const GroupByCsvOptions& options,
                                                    Report& notes);

}  // namespace tandem::scan
#endif
