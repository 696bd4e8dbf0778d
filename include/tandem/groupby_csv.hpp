// Group-by straight from a CSV file: the file streams through in chunks on several threads and
// only the columns the query names are read (the others are stepped over, not converted).
//
//   auto r = tandem::groupby_csv("g.csv", {.by = {"id1"}, .aggs = tandem::parse_aggregations("sum(v1)")});
//
// The answer equals tandem::groupby(tandem::read_csv(path), spec): the same dialect (a quote
// inside an unquoted field is a literal byte, a value with a leading zero such as 08123 is text
// when types are inferred, a column with no value is i64). Types come from the first `sample_rows` rows; a
// later value that does not fit widens its column (i64 -> f64 -> str) and the file is read again
// (standard input and pipes cannot be: they fail naming the column, so name its type in the
// schema). "-" reads standard input; a path ending in .gz or .zst is decompressed as it streams.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"

namespace tandem {

struct GroupByCsvOptions {
  CsvOptions csv{};             // delimiter, schema, threads; chunk_bytes: the scan's chunk size
  std::size_t memory_limit{0};  // for the group-by's partial states (0: its default)
  std::string temp_dir;         // where the group-by may spill (empty: $TMPDIR)
  std::size_t sample_rows{20000};
  // gpu: the file is read into GPU memory, parsed, and grouped there: whole where it fits in a
  // quarter of the GPU's free memory, else (and standard input or a pipe) in pieces whose partial
  // groups are combined on the CPU. A compressed file, a field only the CPU reader decides, or
  // aggregations that do not combine across pieces stream on the CPU instead, and the report
  // says why (a stream that cannot be read again fails naming the reason). NoDeviceError
  // without a GPU.
  // cpu: streamed on the CPU. auto: the GPU where a GPU is present, the file is sized and
  // uncompressed, and the GPU path is estimated at least 10 % faster from the file's size and the
  // CPU threads (src/scan/csv_device_choice.hpp; both estimates in the report's notes).
  Device device{Device::cpu};
  // gpu: a file over a quarter of the GPU's free memory, or a stream, is read into the GPU this
  // many bytes at a time, each piece grouped there and the partial groups combined on the CPU
  // (0: a sixteenth of the free memory, at most 1 GiB from a file and 256 MiB from a stream).
  // Set, a file larger than this is read in pieces too.
  std::size_t gpu_piece_bytes{0};
  // Called about twice a second from the reading thread with the input bytes read so far.
  std::function<void(std::size_t bytes)> progress;
  // Set: the result goes to it a table at a time in key order (each piece with the result's
  // columns and at least one row), and the returned table has the columns and no rows. A run
  // that spilled hands over one key range at a time, so the result never sits whole in memory
  // (write each piece out as it comes). Unset: the returned table holds the whole result.
  std::function<void(Table piece)> on_result;
};

// UsageError for a column the header lacks or an aggregation that does not apply; InputError for
// a missing, empty or malformed file (file, line and column named).
GroupByResult groupby_csv(const std::string& path, const GroupBySpec& spec, const GroupByCsvOptions& options = {});

}  // namespace tandem
