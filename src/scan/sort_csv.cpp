// tandem::sort_csv (tandem/table_sort.hpp): a CSV file sorted in memory when it fits the limit
// (sort_csv_records.hpp), else by sorted runs in a temporary file and a merge
// (sort/table/run_file.hpp, run_merge.hpp). It reads through the scan, so it lives in its layer.
#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "scan/sort_csv_records.hpp"
#include "sort/table/run_file.hpp"
#include "sort/table/run_merge.hpp"
#include "table/csv_pieces.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/table_sort.hpp"

namespace tandem {
namespace {

// The default limit: this share of the available memory (the sort is all the process holds).
constexpr std::size_t kMemoryShareDivisor = 2;
// Peak bytes of the in-memory sort over the file's bytes, with room to spare: the text, the key
// columns, their normalised words and the row order (2.4-3.4x for 10^7 db-benchmark rows).
constexpr std::uint64_t kInMemoryFactor = 5;
// A piece's text is this share of the limit: parsing it (the text, the parser's slots, the
// assembled columns) takes about half, and its run table (keys and records) about a quarter.
constexpr std::size_t kPieceDivisor = 8;
// The runs' blocks read back at once take at most this share of the limit.
constexpr std::size_t kMergeDivisor = 3;
constexpr std::size_t kMinBlockBytes = 4096;
constexpr std::size_t kBatchRows = 65536;

std::size_t memory_limit(std::size_t given) { return memory_limit_or_share(given, kMemoryShareDivisor); }

std::size_t table_bytes(const Table& t) {
  std::size_t b = 0;
  for (const auto& c : t.columns()) b += c.values.size() + c.offsets.size() + c.validity.size();
  return b;
}

int threads_of(const CsvSortOptions& o) { return o.sort.threads > 0 ? o.sort.threads : default_threads(); }

CsvSortResult sort_in_memory(const std::string& path, const SortSpec& spec, std::ostream& out,
                             const CsvSortOptions& options, const std::string& why) {
  CsvSortResult r = scan::sort_csv_records(path, spec, out, options);
  r.report.note("sorted in memory: " + why);
  return r;
}

// The runs' columns (no rows), the key layout joined over every run and how the output begins.
struct RunShape {
  Table like;
  std::optional<detail::KeyLayout> layout;
  std::string header;
};

// A name for the records' column that no key has.
std::string records_name(const SortSpec& spec) {
  std::string name = "records";
  auto taken = [&] {
    return std::any_of(spec.by.begin(), spec.by.end(), [&](const SortKey& k) { return k.column == name; });
  };
  while (taken()) name += '_';
  return name;
}

// What a run holds of a piece: its key columns and its records as written (the last column).
Table run_table(const Table& piece, const SortSpec& spec, std::string_view body, const csv::PieceReader& reader,
                const std::string& line_end) {
  std::vector<Column> columns;
  for (const auto& c : piece.columns())
    if (std::any_of(spec.by.begin(), spec.by.end(), [&](const SortKey& k) { return k.column == c.name; }))
      columns.push_back(c);
  columns.push_back(scan::record_column(records_name(spec), body, reader.delimiter(), piece.num_columns(), line_end));
  if (columns.back().length != piece.rows())
    throw Error(fmt::format("a CSV piece of {} rows split into {} records", piece.rows(), columns.back().length));
  return Table(std::move(columns));
}

// Reads the pieces, writes each in its sorted order as a run.
RunShape form_runs(const std::string& path, const SortSpec& spec, const CsvSortOptions& options, std::size_t limit,
                   std::uint64_t file_bytes, detail::RunFile& runs, CsvSortResult& r) {
  const std::size_t piece_bytes = std::max<std::size_t>(limit / kPieceDivisor, 1);
  const std::size_t expected_runs = static_cast<std::size_t>(file_bytes / piece_bytes) + 1;
  const std::size_t block_bytes = std::max(limit / kMergeDivisor / expected_runs, kMinBlockBytes);
  csv::PieceReader reader(path, options.csv, piece_bytes);
  RunShape shape;
  shape.header = reader.header_text();
  const std::string line_end = scan::line_end_of(shape.header);
  double read_s = 0, sort_s = 0, write_s = 0;
  std::string body;
  for (bool restarted = false;;) {
    Stopwatch sw;
    auto parsed = reader.next(restarted, &body);
    if (restarted) runs.clear(), r.rows_read = 0, shape.layout.reset();
    if (!parsed) break;
    const Table piece = run_table(*parsed, spec, body, reader, line_end);
    parsed.reset();
    read_s += sw.seconds();
    shape.like = empty_like(piece);
    const auto layout = detail::plan_key_layout(piece, spec, options.sort);
    if (shape.layout) detail::join_layout(*shape.layout, layout);
    else shape.layout = layout;
    r.rows_read += piece.rows();
    sw.reset();
    const auto order = argsort(piece, spec, options.sort).rows;
    sort_s += sw.seconds();
    sw.reset();
    // A block read back holds its image (at most the table's bytes), its widened columns and
    // its normalised keys.
    const std::size_t row_bytes =
        2 * std::max<std::size_t>(table_bytes(piece) / std::max<std::size_t>(piece.rows(), 1), 1) + 8 * layout.words;
    runs.add_run(piece, order, block_bytes / row_bytes, threads_of(options));
    write_s += sw.seconds();
  }
  r.runs = runs.runs();
  const auto passes = reader.passes();
  r.report.add("read pieces", "cpu", read_s,
               fmt::format("{} rows in {} pieces of at most {} of text, each record's place found{}", r.rows_read,
                           r.runs, human_bytes(piece_bytes),
                           passes > 1 ? fmt::format(", {} passes (a column's type widened)", passes) : ""));
  r.report.add("sort pieces", "cpu", sort_s, "normalised keys and a radix row order per piece");
  r.report.add("write runs", "cpu", write_s,
               fmt::format("{} to {}/ (the keys and the records as written; blocks of about {})",
                           human_bytes(runs.bytes_written()), runs.folder(), human_bytes(block_bytes)));
  return shape;
}

// The records of a batch (its last column) as they were read.
void write_records(std::ostream& out, const Table& batch) {
  const Column& records = batch.column(batch.num_columns() - 1);
  const auto off = records.string_offsets();
  out.write(reinterpret_cast<const char*>(records.values.data()) + off.front(),
            static_cast<std::streamsize>(off.back() - off.front()));
}

// Writes the merge's batches' records on a thread of its own while the merge makes the next one;
// at most one batch waits. A failed write is thrown to the merge at its next push, or by finish.
class BatchWriter {
 public:
  explicit BatchWriter(std::ostream& out) : out_(out), thread_([this] { loop(); }) {}
  ~BatchWriter() { close(); }
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  void push(Table batch) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !waiting_ || error_; });
    if (error_) std::rethrow_exception(error_);
    waiting_ = std::move(batch);
    changed_.notify_all();
  }
  void finish() {
    close();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void loop() {
    for (;;) {
      Table batch;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return waiting_ || closed_; });
        if (!waiting_) return;
        batch = std::move(*waiting_);
        waiting_.reset();
      }
      changed_.notify_all();
      try {
        write_records(out_, batch);
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
        changed_.notify_all();
        return;
      }
    }
  }
  std::ostream& out_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Table> waiting_;
  bool closed_{false};
  std::exception_ptr error_;
  std::thread thread_;  // last: starts after the members it uses
};

CsvSortResult sort_by_runs(const std::string& path, const SortSpec& spec, std::ostream& out,
                           const CsvSortOptions& options, std::size_t limit, std::uint64_t file_bytes) {
  CsvSortResult r;
  r.report.operation = "sort";
  detail::RunFile runs(detail::temp_parent(options.temp_dir));
  RunShape shape = form_runs(path, spec, options, limit, file_bytes, runs, r);
  const Table& like = shape.like;
  if (!shape.layout) shape.layout = detail::plan_key_layout(like, spec, options.sort);
  Stopwatch sw;
  const detail::RowComparator cmp(std::move(*shape.layout));
  scan::write_header(out, shape.header);
  BatchWriter writer(out);
  r.rows_written = detail::merge_runs(runs, like, cmp, spec.limit, kBatchRows,
                                      [&](Table&& batch) { writer.push(std::move(batch)); });
  writer.finish();
  r.report.add(
      "merge runs", "cpu", sw.seconds(),
      fmt::format("{} runs into {} rows (their records as read, batches of {} rows written while the next merge); {}",
                  r.runs, r.rows_written, kBatchRows, describe(cmp.layout(), like)));
  r.report.note(
      fmt::format("sorted by runs: the {} file needs about {}x its size in memory, over the limit {}; {} runs, merged, "
                  "temporary files removed",
                  human_bytes(file_bytes), kInMemoryFactor, human_bytes(limit), r.runs));
  return r;
}

}  // namespace

CsvSortResult sort_csv(const std::string& in_path, const SortSpec& spec, std::ostream& out,
                       const CsvSortOptions& options) {
  const std::size_t limit = memory_limit(options.memory_limit);
  if (!io::is_sized_file(in_path))
    return sort_in_memory(in_path, spec, out, options, "the input is a stream or an empty file");
  const std::uint64_t bytes = io::file_size(in_path);
  if (bytes * kInMemoryFactor <= limit)
    return sort_in_memory(in_path, spec, out, options,
                          fmt::format("the {} file fits the memory limit {}", human_bytes(bytes), human_bytes(limit)));
  return sort_by_runs(in_path, spec, out, options, limit, bytes);
}

}  // namespace tandem
