#include "scan/sort_csv_records.hpp"

#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <ostream>
#include <unordered_set>

#include <fmt/format.h>

#include "scan/chunk_parser.hpp"
#include "scan/csv_stream.hpp"
#include "scan/source.hpp"
#include "scan/structural.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/uninit_allocator.hpp"

namespace tandem::scan {
namespace {

template <class T>
using Uninit = std::vector<T, UninitAllocator<T>>;

// From a file, `auto` sorts the keys on the GPU only from this many rows. The GPU's start and the
// keys' upload take about 0.3-0.5 s; the CPU's radix order of 10^7 keys takes 0.11 s on 16
// cores (H100 box: the whole 10^7-row process 0.66-0.98 s with the CPU, 1.07-1.37 s with the
// GPU), so the GPU can only pay from several times 10^7 rows.
constexpr std::size_t kGpuKeyRows = std::size_t{1} << 26;

// Rows written per block: about 13 MiB of db-benchmark text, written while the next is copied.
constexpr std::size_t kBlockRows = std::size_t{1} << 18;
constexpr std::size_t kAhead = 8;  // records asked for ahead of their copy

// Where one record's bytes lie (its line end included).
struct Record {
  const char* at{nullptr};
  std::uint64_t bytes{0};
};

// One chunk of the scan, kept until the output is written: the scan's own buffer, not a copy.
struct KeptChunk {
  std::shared_ptr<char[]> owner;
  const char* text{nullptr};
  std::vector<std::uint32_t> starts, ends;
  Table keys;
};

// The scan's consumer: chunks arrive on the scan's workers in any order.
class ChunkKeeper {
 public:
  void add(std::size_t index, const Table& keys, const ChunkRecords& r) {
    auto c = std::make_unique<KeptChunk>();
    c->owner = r.owner;
    c->text = r.text;
    c->starts = std::move(*r.starts);
    c->ends = std::move(*r.ends);
    c->keys = keys;
    std::lock_guard lock(mutex_);
    if (chunks_.size() <= index) chunks_.resize(index + 1);
    chunks_[index] = std::move(c);
  }
  std::vector<std::unique_ptr<KeptChunk>>& chunks() { return chunks_; }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<KeptChunk>> chunks_;
};

// The columns to parse: the keys, then the schema's columns (so that their values are checked).
std::vector<std::string> parsed_columns(const SortSpec& spec, const CsvSchema& schema) {
  std::vector<std::string> names;
  std::unordered_set<std::string> seen;
  for (const auto& k : spec.by)
    if (seen.insert(k.column).second) names.push_back(k.column);
  for (const auto& s : schema)
    if (seen.insert(s.name).second) names.push_back(s.name);
  return names;
}

Table joined_keys(std::vector<std::unique_ptr<KeptChunk>>& chunks, const std::vector<ColumnPlan>& plans, int threads) {
  if (chunks.empty()) {
    std::vector<Column> columns;
    for (const auto& p : plans) columns.push_back(ColumnBuilder(p.name, p.type).finish());
    return Table(std::move(columns));
  }
  std::vector<Table> parts;
  for (auto& c : chunks) parts.push_back(std::move(c->keys));
  return parts.size() == 1 ? std::move(parts.front()) : concat_tables(parts, parts.front(), threads);
}

// Where row r's record lies, found from the chunk that holds it: no array of every row's place
// (16 bytes a row of fresh memory). Rows in buckets of 2^12 point at the chunks they may be in.
class RecordPlaces {
 public:
  RecordPlaces(const std::vector<std::unique_ptr<KeptChunk>>& chunks, std::string_view line_end) : chunks_(chunks) {
    first_.push_back(0);
    for (const auto& c : chunks) first_.push_back(first_.back() + c->starts.size());
    const std::size_t rows = first_.back();
    for (std::size_t b = 0, c = 0; b <= (rows >> kBucketShift); ++b) {
      while (c + 1 < chunks.size() && first_[c + 1] <= (b << kBucketShift)) ++c;
      bucket_.push_back(static_cast<std::uint32_t>(c));
    }
    // Only the input's last record can lack a line end: a copy of it with the header's.
    if (rows > 0) {
      const Record r = place(rows - 1);
      if (r.at[r.bytes - 1] != '\n') last_ = std::string(r.at, r.bytes) + std::string(line_end);
    }
  }
  std::size_t rows() const { return first_.back(); }
  Record operator()(std::size_t r) const {
    if (!last_.empty() && r + 1 == rows()) return {last_.data(), last_.size()};
    return place(r);
  }
  // Asks for row r's start and end.
  void prefetch(std::size_t r) const {
    const std::size_t c = chunk_of(r), i = r - first_[c];
    __builtin_prefetch(chunks_[c]->starts.data() + i);
    __builtin_prefetch(chunks_[c]->ends.data() + i);
  }

 private:
  static constexpr unsigned kBucketShift = 12;
  std::size_t chunk_of(std::size_t r) const {
    const std::size_t b = r >> kBucketShift;
    const auto lo = first_.begin() + bucket_[b] + 1;
    const auto hi = b + 1 < bucket_.size() ? first_.begin() + bucket_[b + 1] + 2 : first_.end();
    return static_cast<std::size_t>(std::upper_bound(lo, hi, r) - first_.begin()) - 1;
  }
  Record place(std::size_t r) const {
    const std::size_t c = chunk_of(r), i = r - first_[c];
    const KeptChunk& k = *chunks_[c];
    return {k.text + k.starts[i], k.ends[i] - k.starts[i]};
  }
  const std::vector<std::unique_ptr<KeptChunk>>& chunks_;
  std::vector<std::size_t> first_;     // each chunk's first row, and the rows in all
  std::vector<std::uint32_t> bucket_;  // the chunk of each bucket's first row
  std::string last_;
};

// The rows' records copied in order into `buf` on every core.
void copy_block(const Record* recs, std::size_t k, int threads, std::vector<char>& buf) {
  const auto T = static_cast<std::size_t>(std::max(1, std::min<int>(threads, static_cast<int>(k / 4096) + 1)));
  std::vector<std::uint64_t> start(T + 1, 0);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = k * t / T; i < k * (t + 1) / T; ++i) start[t + 1] += recs[i].bytes;
  for (std::size_t t = 0; t < T; ++t) start[t + 1] += start[t];
  if (buf.size() < start[T]) buf.resize(start[T]);
  parallel_for(T, static_cast<int>(T), [&](std::size_t t) {
    char* dst = buf.data() + start[t];
    const std::size_t end = k * (t + 1) / T;
    for (std::size_t i = k * t / T; i < end; ++i) {
      if (i + kAhead < end) __builtin_prefetch(recs[i + kAhead].at);
      std::memcpy(dst, recs[i].at, recs[i].bytes);
      dst += recs[i].bytes;
    }
  });
  buf.resize(start[T]);
}

// The records in `order`, a block gathered and copied while the one before is written.
void write_records(std::ostream& out, const RecordPlaces& places, const std::vector<std::size_t>& order, int threads) {
  Uninit<Record> block(std::min(order.size(), kBlockRows));
  std::vector<char> bufs[2];
  std::future<void> writing;
  for (std::size_t b = 0, i0 = 0; i0 < order.size(); ++b, i0 += kBlockRows) {
    const std::size_t k = std::min(kBlockRows, order.size() - i0);
    const std::size_t* rows = order.data() + i0;
#pragma omp parallel for num_threads(threads) schedule(static) if (k > (std::size_t{1} << 15))
    for (std::size_t j = 0; j < k; ++j) {
      if (j + 16 < k) places.prefetch(rows[j + 16]);
      block[j] = places(rows[j]);
    }
    std::vector<char>& buf = bufs[b % 2];
    copy_block(block.data(), k, threads, buf);
    if (writing.valid()) writing.get();
    writing = std::async(std::launch::async,
                         [&out, &buf] { out.write(buf.data(), static_cast<std::streamsize>(buf.size())); });
  }
  if (writing.valid()) writing.get();
}

}  // namespace

void write_header(std::ostream& out, const std::string& header) {
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (header.empty() || header.back() != '\n') out << '\n';
}

std::string line_end_of(std::string_view header) { return header.ends_with("\r\n") ? "\r\n" : "\n"; }

Column record_column(std::string name, std::string_view body, char delimiter, std::size_t fields,
                     std::string_view line_end) {
  constexpr std::size_t kPadding = 64;  // the scan's masks read 64 bytes past the end
  auto padded = std::make_unique_for_overwrite<char[]>(body.size() + kPadding);
  std::memcpy(padded.get(), body.data(), body.size());
  std::memset(padded.get() + body.size(), 0, kPadding);
  const std::vector<ColumnPlan> plans;
  const std::vector<int> slot(fields, -1);
  ChunkInput in{padded.get(), padded.get() + body.size(), delimiter, fields, &plans,
                &slot,        detected_simd_level(),      true};
  const ChunkResult r = parse_chunk(in);
  if (r.status != ChunkStatus::ok) throw Error(fmt::format("records of a CSV piece: {}", r.error_what));
  const std::size_t n = r.record_starts.size();
  Uninit<std::uint64_t> offsets(n + 1);  // fresh each piece: uninitialised, on huge pages when large
  Uninit<char> bytes(body.size() + line_end.size());
  offsets[0] = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < n;) {  // runs of adjacent records (no blank line between) at once
    std::size_t j = i + 1;
    while (j < n && r.record_starts[j] == r.record_ends[j - 1]) ++j;
    const std::size_t from = r.record_starts[i];
    std::memcpy(bytes.data() + at, body.data() + from, r.record_ends[j - 1] - from);
    for (; i < j; ++i) offsets[i + 1] = at + (r.record_ends[i] - from);
    at = offsets[j];
  }
  if (n > 0 && bytes[at - 1] != '\n') {
    std::memcpy(bytes.data() + at, line_end.data(), line_end.size());
    at += line_end.size();
    offsets[n] = at;
  }
  bytes.resize(at);  // smaller: no copy
  Column c;
  c.name = std::move(name);
  c.type = ColumnType::str;
  c.length = n;
  c.values = Buffer::take(std::move(bytes));
  c.offsets = Buffer::take(std::move(offsets));
  return c;
}

CsvSortResult sort_csv_records(const std::string& path, const SortSpec& spec, std::ostream& out,
                               const CsvSortOptions& options) {
  const int threads = options.sort.threads > 0 ? options.sort.threads : default_threads();
  StreamOptions so;
  so.delimiter = options.csv.delimiter;
  so.schema = options.csv.schema;
  so.threads = options.csv.threads;
  so.chunk_bytes = options.csv.chunk_bytes;
  Stopwatch sw;
  // Read whole on every core and scanned in place (the text is kept anyway); a compressed file
  // streams through its decompressor, the scan's buffers kept as they fill.
  if (!is_compressed(path)) {
    auto whole = std::make_shared<io::CharBuffer>(io::read_bytes(path, threads));
    so.text = std::shared_ptr<char[]>(whole, whole->data());
    so.text_bytes = whole->size();
  }
  ChunkKeeper* keeper = nullptr;
  std::unique_ptr<ChunkKeeper> kept;
  const auto summary = scan_csv_records(path, parsed_columns(spec, options.csv.schema), so, [&]() -> RecordConsumer {
    kept = std::make_unique<ChunkKeeper>();  // a fresh pass drops the chunks of the one before
    keeper = kept.get();
    return [keeper](std::size_t index, const Table& keys, const ChunkRecords& r) { keeper->add(index, keys, r); };
  });
  auto& chunks = keeper->chunks();
  const double read_s = sw.seconds();
  sw.reset();
  const Table keys = joined_keys(chunks, summary.plans, threads);
  const RecordPlaces places(chunks, line_end_of(summary.header_text));
  const double join_s = sw.seconds();

  TableSortOptions sort_options = options.sort;
  const bool keys_on_cpu = sort_options.device == Device::auto_ && keys.rows() < kGpuKeyRows;
  if (keys_on_cpu) sort_options.device = Device::cpu;
  auto order = argsort(keys, spec, sort_options);
  CsvSortResult r;
  r.report = std::move(order.report);
  r.report.operation = "sort";
  r.report.stages.insert(
      r.report.stages.begin(),
      {{"read input", "cpu", read_s,
        fmt::format("{} rows; {} of {} columns parsed, every record kept as written ({}, {} chunks)", keys.rows(),
                    summary.columns_read, summary.columns_total, human_bytes(summary.bytes), summary.chunks)},
       {"join keys", "cpu", join_s, "the chunks' key columns joined"}});
  sw.reset();
  write_header(out, summary.header_text);
  write_records(out, places, order.rows, threads);
  r.report.add("write output", "cpu", sw.seconds(),
               fmt::format("{} rows, their records' bytes as read", order.rows.size()));
  if (keys_on_cpu)
    r.report.note(
        fmt::format("keys sorted on the CPU: auto takes the GPU for a file's keys from {} rows (its start "
                    "costs more than it saves below)",
                    kGpuKeyRows));
  if (summary.passes > 1) r.report.note(fmt::format("read {} times: a key column's type widened", summary.passes));
  r.rows_read = keys.rows();
  r.rows_written = order.rows.size();
  return r;
}

}  // namespace tandem::scan
