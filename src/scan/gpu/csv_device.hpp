// CSV parsed on the GPU: the body's bytes in device memory become the needed columns in device
// memory (numbers, strings as offsets + bytes, validity bitmaps), in the CPU reader's dialect and
// with its types (include/tandem/table/csv.hpp).
//
// Passes: each 64-byte segment counts its quotes; an XOR scan gives every segment the quote state
// it starts in (a quote toggles it; the dialect's "" escape toggles twice); the line breaks
// outside quotes give the rows; one thread per row splits its fields, checks the row and
// classifies the needed fields (csv_field.hpp); the classes, ORed per column, give the types;
// then numbers are converted and strings copied. Whatever the device cannot decide exactly (a
// malformed row, inf or nan, a long integer, a quoted number...) is reported as `needs_cpu`, and
// read_csv_on_gpu then reads the text with the CPU reader, which gives its answer or its error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/table.hpp"
#include "tandem/table/csv.hpp"

#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

#include "tandem/cuda/buffers.hpp"
#endif

namespace tandem::scan {

// The header's facts the device parse needs (found on the host).
struct CsvLayout {
  char delimiter{','};
  std::vector<std::string> names;  // every column of the file
  std::size_t body_offset{0};      // where the first record starts (after BOM and header)
};

// The header of `text` (UsageError/InputError as the CPU reader: an empty file, a bad delimiter,
// a schema naming a column the header lacks).
CsvLayout csv_layout(std::string_view text, const CsvOptions& options, std::string_view source);

// The columns a parse reads (every column when `columns` is empty), in output order: their
// names, their indices in the file, and the types the schema fixes. UsageError naming a column
// the header lacks.
struct WantedColumns {
  std::vector<std::string> names;
  std::vector<std::size_t> index;
  std::vector<ColumnType> types;  // fixed[i]: the schema's type, else inferred
  std::vector<bool> fixed;
};
WantedColumns wanted_columns(const CsvLayout& layout, const CsvOptions& options,
                             const std::vector<std::string>& columns);

// A file parsed in pieces: how a later piece's inferred type of a column stands to the type the
// first piece gave it. Types widen i64 -> f64 -> str (a piece without a value of the column infers
// i64): `narrower` is parsed again with the first type fixed; `wider` means the whole file would
// have inferred another type, so the pieces so far do not hold.
enum class PieceType { same, narrower, wider };
PieceType compare_piece_type(ColumnType first, ColumnType later);

#if TANDEM_HAS_CUDA
struct DeviceCsvColumn {
  std::string name;
  ColumnType type{ColumnType::str};
  gpu::DeviceBuffer<std::byte> values;        // numbers; strings' bytes
  gpu::DeviceBuffer<std::uint64_t> offsets;   // strings: rows + 1
  gpu::DeviceBuffer<std::uint32_t> validity;  // bit i of word i / 32 (Arrow's bit order)
  std::size_t missing{0};
};

struct DeviceCsv {
  bool needs_cpu{false};  // the device could not decide some field or row: read on the CPU
  std::string why;        // what made it so
  std::size_t rows{0};
  std::vector<DeviceCsvColumn> columns;
};

// Parses the body [body, body + bytes) in device memory. `wanted` lists the needed columns
// (indices into layout.names, in output order); `types[i]` fixes wanted column i's type when
// `fixed[i]`, else it is inferred. Synchronises `stream` before returning.
DeviceCsv parse_csv_device(const char* body, std::size_t bytes, const CsvLayout& layout,
                           const std::vector<std::size_t>& wanted, const std::vector<ColumnType>& types,
                           const std::vector<bool>& fixed, cudaStream_t stream);

// One past the last line break outside quotes in [body, body + bytes), which starts outside
// quotes: where the complete rows of a piece of a file end (0 where no row ends there).
std::size_t complete_rows_end(const char* body, std::size_t bytes, cudaStream_t stream);

// The device columns copied to a host table.
Table download(const DeviceCsv& csv);
#endif

// Reads the named columns (every column when `columns` is empty) of CSV text on the current
// GPU, with the CPU reader's answers and errors: where the device parse needs the CPU, the CPU
// reader reads the text (the report says why). NoDeviceError without a GPU.
Table read_csv_on_gpu(std::string_view text, const CsvOptions& options, const std::vector<std::string>& columns,
                      Report& report, std::string_view source = "<text>");

}  // namespace tandem::scan
