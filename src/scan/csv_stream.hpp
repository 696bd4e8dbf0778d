// The streaming CSV scan: the header and a sample read first, then the body cut at record
// boundaries into chunks (one reader fills reused buffers in input order and carries the partial
// record at a buffer's end into the next), each chunk parsed on one of `threads` workers into
// the columns asked for and handed to a consumer with its index (input order).
//
// Types: a schema's are fixed; the others start as the sample's (its first `sample_rows` rows)
// and widen i64 -> f64 -> str where a later value does not fit. A widening found during the scan
// makes the attempt return the widened types; the caller starts a fresh consumer and scans again
// (only a source that can be opened again: standard input and pipes fail naming the value).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "scan/chunk_parser.hpp"
#include "scan/source.hpp"
#include "tandem/table/csv.hpp"

namespace tandem::scan {

struct StreamOptions {
  char delimiter{0};  // 0: detected from the header
  CsvSchema schema;
  int threads{0};              // 0: default_threads()
  std::size_t chunk_bytes{0};  // 0: 8 MiB (tests force small chunks)
  std::size_t sample_rows{20000};
  // Called from the reading thread about twice a second with the bytes read so far.
  std::function<void(std::size_t bytes)> progress;
  // The whole input, already in memory: scanned in place (no source opened, `path` only names
  // it), each chunk a share of it (a records consumer that keeps a chunk keeps it alive).
  std::shared_ptr<char[]> text;
  std::size_t text_bytes{0};
};

struct Header {
  std::vector<std::string> names;
  char delimiter{','};
  std::size_t bytes{0};     // header bytes (BOM included) before the body
  std::size_t newlines{0};  // line feeds in them
  std::string text;         // the header's bytes as read (BOM and line end included)
};

using ChunkConsumer = std::function<void(std::size_t index, const Table& chunk)>;

struct StreamSummary {
  int threads{0};
  std::size_t chunks{0}, fast_chunks{0}, bytes{0}, rows{0}, passes{1};
  std::size_t columns_read{0}, columns_total{0};
  std::size_t chunk_bytes{0};
  SimdLevel simd{SimdLevel::scalar};
  std::vector<ColumnPlan> plans;  // the columns read, with their final types
  std::string header_text;        // the header's bytes as read
  double seconds{0};
};

// Scans `path` for `columns` (names of the header's columns, each once), calling `fresh_consumer`
// once per pass for the consumer of that pass' chunks. InputError for malformed input (file,
// line, column), UsageError for a column the header lacks or a schema that names one.
StreamSummary scan_csv(const std::string& path, const std::vector<std::string>& columns, const StreamOptions& options,
                       const std::function<ChunkConsumer()>& fresh_consumer);

// A chunk's text and where its records lie in it (ChunkResult::record_starts/ends), valid during
// the consumer's call unless it keeps `owner`.
struct ChunkRecords {
  const char* text{nullptr};
  std::size_t bytes{0};
  std::vector<std::uint32_t>* starts{nullptr};  // a consumer may take these
  std::vector<std::uint32_t>* ends{nullptr};
  // The buffer `text` lies in: a consumer that keeps a copy keeps the text past its call.
  std::shared_ptr<char[]> owner;
};
using RecordConsumer = std::function<void(std::size_t index, const Table& chunk, const ChunkRecords& records)>;

// The same scan handing each chunk's text and records beside its columns: for output that keeps
// the input's records as they were written.
StreamSummary scan_csv_records(const std::string& path, const std::vector<std::string>& columns,
                               const StreamOptions& options, const std::function<RecordConsumer()>& fresh_consumer);

}  // namespace tandem::scan
