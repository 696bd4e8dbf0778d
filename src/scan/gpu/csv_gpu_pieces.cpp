// The GPU CSV group-by of a file read a piece at a time (csv_gpu_pieces.hpp). While the GPU
// parses and groups piece i, a thread reads piece i + 1 into the other pinned buffer; the bytes
// after piece i's last complete row move on the device to the front of the next piece.
#include "scan/gpu/csv_gpu_pieces.hpp"

#if TANDEM_HAS_CUDA
#include <algorithm>
#include <future>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "groupby/combine_plan.hpp"
#include "groupby/sink/sliced_consume.hpp"
#include "scan/source.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/groupby_sink.hpp"

namespace tandem::scan {
namespace {

constexpr std::size_t kMostPieceBytes = std::size_t{1} << 30;
// A pipe brings a few GB/s: smaller pieces keep up with it, and the two pinned buffers, whose
// allocation pins every page, are made sooner.
constexpr std::size_t kMostStreamPieceBytes = std::size_t{256} << 20;
constexpr std::size_t kLeastPieceBytes = std::size_t{1} << 20;

// The input in order: a sized file at offsets on several threads, a stream as it comes.
class PieceReader {
 public:
  PieceReader(const std::string& path, int threads) : threads_(threads) {
    if (path != "-" && io::is_sized_file(path)) {
      file_.emplace(path);
      size_ = file_->size();
    } else {
      source_ = open_source(path);
    }
  }
  bool rewindable() const { return file_.has_value(); }
  // Up to n bytes into dst; fewer only at the end.
  std::size_t read(char* dst, std::size_t n) {
    const std::size_t early = std::min(n, pending_.size() - pending_at_);
    std::copy_n(pending_.data() + pending_at_, early, dst);
    pending_at_ += early;
    return early + read_input(dst + early, n - early);
  }
  // The next reads give these bytes first (what was read past the header).
  void put_back(std::string bytes) {
    pending_ = std::move(bytes);
    pending_at_ = 0;
  }

 private:
  std::size_t read_input(char* dst, std::size_t n) {
    if (n == 0) return 0;
    if (source_) return source_->read_full(dst, n);
    const auto k = static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - at_));
    if (k) file_->read(dst, k, at_, threads_);
    at_ += k;
    return k;
  }

  std::string pending_;
  std::size_t pending_at_{0};
  int threads_;
  std::optional<io::SizedFile> file_;
  std::unique_ptr<ByteSource> source_;
  std::uint64_t size_{0}, at_{0};
};

// Why the GPU path stops here (caught below: a sized file streams on the CPU instead).
struct LeaveGpu {
  std::string why;
  bool schema_helps{false};
};

std::size_t piece_bytes(const GroupByCsvOptions& options, bool stream) {
  if (options.gpu_piece_bytes > 0) return options.gpu_piece_bytes;
  std::size_t free = 0, total = 0;
  TANDEM_CUDA(cudaMemGetInfo(&free, &total));
  return std::clamp(free / 16, kLeastPieceBytes, stream ? kMostStreamPieceBytes : kMostPieceBytes);
}

// Times and counts of the pieces, for the report.
struct PieceTotals {
  std::size_t pieces{0}, rows{0}, bytes{0}, partial_groups{0};
  double read{0}, parse{0}, columns{0}, group{0}, combine{0};
};

// Parses, groups and hands on the pieces, with the types the first one gave.
class PieceGrouper {
 public:
  PieceGrouper(const CsvLayout& layout, const WantedColumns& want, const GroupBySpec& partial, GroupBySink& sink,
               int threads, cudaStream_t stream)
      : layout_(layout),
        want_(want),
        partial_(partial),
        sink_(sink),
        threads_(threads),
        stream_(stream),
        types_(want.types) {}

  void group(const char* text, std::size_t bytes, PieceTotals& t) {
    Stopwatch w;
    DeviceCsv parsed = parse(text, bytes);
    t.parse += w.seconds();
    w.reset();
    t.rows += parsed.rows;
    std::optional<DeviceTable> table = device_table_of(std::move(parsed), threads_, stream_);
    if (!table) throw LeaveGpu{"a piece with more rows than the GPU ranks strings for"};
    t.columns += w.seconds();
    w.reset();
    GroupByOptions go;
    go.device = Device::gpu;
    go.threads = threads_;
    GroupByResult r = groupby(*table, partial_, go);
    if (t.pieces == 0) notes = r.report.notes;
    t.group += w.seconds();
    w.reset();
    t.partial_groups += r.table.rows();
    sink::consume_in_slices(sink_, next_chunk_, r.table, threads_);
    ++t.pieces;
    t.combine += w.seconds();
  }

  std::vector<std::string> notes;  // the first piece's group-by's

 private:
  DeviceCsv parse(const char* text, std::size_t bytes) {
    DeviceCsv p = parse_csv_device(text, bytes, layout_, want_.index, types_, want_.fixed, stream_);
    // A value of a column the device cannot classify (08123 after numbers, say): its type in the
    // schema would settle it.
    if (p.needs_cpu) throw LeaveGpu{p.why, p.why.rfind("column '", 0) == 0};
    if (!typed_) {
      for (std::size_t w = 0; w < types_.size(); ++w) types_[w] = p.columns[w].type;
      typed_ = true;
      return p;
    }
    bool narrower = false;
    for (std::size_t w = 0; w < types_.size(); ++w) {
      switch (compare_piece_type(types_[w], p.columns[w].type)) {
        case PieceType::same: break;
        case PieceType::narrower: narrower = true; break;
        case PieceType::wider:
          throw LeaveGpu{fmt::format("column '{}': {} values where the file's first piece read {}", want_.names[w],
                                     to_string(p.columns[w].type), to_string(types_[w])),
                         true};
      }
    }
    if (!narrower) return p;
    p = parse_csv_device(text, bytes, layout_, want_.index, types_, std::vector<bool>(types_.size(), true), stream_);
    if (p.needs_cpu) throw LeaveGpu{p.why, true};
    return p;
  }

  const CsvLayout& layout_;
  const WantedColumns& want_;
  const GroupBySpec& partial_;
  GroupBySink& sink_;
  int threads_;
  cudaStream_t stream_;
  std::vector<ColumnType> types_;
  bool typed_{false};
  std::size_t next_chunk_{0};  // the sink's next chunk index
};

}  // namespace

std::optional<GroupByResult> groupby_csv_gpu_pieces(const std::string& path, const std::vector<std::string>& columns,
                                                    const GroupBySpec& spec, const GroupByCsvOptions& options,
                                                    Report& notes) {
  const CombinePlan plan = plan_combine(spec.aggs, CombineTarget::ranks);
  if (!plan.combinable) {
    notes.note(
        "aggregations that do not combine across pieces of the file (median, quantile, nunique, top, var, std, "
        "first, last): streamed on the CPU");
    return std::nullopt;
  }
  const int threads = options.csv.threads > 0 ? options.csv.threads : default_threads();
  const std::string name = path == "-" ? "<stdin>" : path;
  PieceReader reader(path, threads);
  std::string head(kHeaderBytes, '\0');
  head.resize(reader.read(head.data(), head.size()));
  const std::size_t R = piece_bytes(options, !reader.rewindable());
  std::uint64_t at = 0;  // the input's offset of the piece being grouped
  try {
    if (head.size() == kHeaderBytes && head.find('\n') == std::string::npos)
      throw LeaveGpu{"the header is longer than 1 MiB"};
    const CsvLayout layout = csv_layout(head, options.csv, name);
    const WantedColumns want = wanted_columns(layout, options.csv, columns);
    reader.put_back(head.substr(layout.body_offset));
    at = layout.body_offset;

    GroupBySinkOptions so;
    so.threads = threads;
    so.memory_limit = options.memory_limit;
    so.temp_dir = options.temp_dir;
    GroupBySink sink({spec.by, plan.final}, so);
    gpu::Stream stream;
    const GroupBySpec partial{spec.by, plan.partial};
    PieceGrouper grouper(layout, want, partial, sink, threads, stream);
    PieceTotals t;
    // A piece on the device: the bytes carried over from the last one (at most R), then R new ones.
    const std::size_t capacity = 2 * R;
    gpu::DeviceBuffer<char> device[2] = {gpu::DeviceBuffer<char>(capacity), gpu::DeviceBuffer<char>(capacity)};
    gpu::PinnedBuffer<char> host[2] = {gpu::PinnedBuffer<char>(R), gpu::PinnedBuffer<char>(R)};
    std::size_t carry = 0;
    Stopwatch w;
    std::size_t got = reader.read(host[0].data(), R);
    for (std::size_t cur = 0;; cur ^= 1) {
      const bool last = got < R;
      TANDEM_CUDA(cudaMemcpyAsync(device[cur].data() + carry, host[cur].data(), got, cudaMemcpyHostToDevice, stream));
      TANDEM_CUDA(cudaStreamSynchronize(stream));
      t.read += w.seconds();
      t.bytes += got;
      std::future<std::size_t> next;
      if (!last)
        next = std::async(std::launch::async,
                          [&reader, &buffer = host[cur ^ 1], R] { return reader.read(buffer.data(), R); });
      const std::size_t n = carry + got;
      const std::size_t cut = last ? n : complete_rows_end(device[cur].data(), n, stream);
      if (n - cut > capacity - R)
        throw LeaveGpu{fmt::format("a row longer than the GPU's piece of the file ({} bytes)", R)};
      if (cut > 0 || (last && t.pieces == 0)) grouper.group(device[cur].data(), cut, t);
      if (n > cut)
        TANDEM_CUDA(cudaMemcpyAsync(device[cur ^ 1].data(), device[cur].data() + cut, n - cut, cudaMemcpyDeviceToDevice,
                                    stream));
      at += cut;
      carry = n - cut;
      if (options.progress) options.progress(static_cast<std::size_t>(at));
      if (last) break;
      w.reset();
      got = next.get();
    }

    GroupByResult r;
    if (options.on_result) {
      r = sink.finish([&](Table piece) { options.on_result(combined_result(piece, spec.by, plan)); });
    } else {
      r = sink.finish();
    }
    r.table = combined_result(r.table, spec.by, plan);
    int gpu_index = 0;
    TANDEM_CUDA(cudaGetDevice(&gpu_index));
    const std::string gpu = fmt::format("gpu{}", gpu_index);
    r.report.stages.insert(
        r.report.stages.begin(),
        {{"read + copy CSV to GPU", fmt::format("cpu x{} + {}", threads, gpu), t.read,
          fmt::format("{} bytes in {} pieces of up to {} bytes (the next piece read while one is grouped)", t.bytes,
                      t.pieces, R)},
         {"parse CSV", gpu, t.parse,
          fmt::format("{} rows, {} of {} columns", t.rows, want.index.size(), layout.names.size())},
         {"columns for the group-by", gpu, t.columns, "strings ranked on the GPU, piece by piece"},
         {"group pieces", gpu, t.group,
          fmt::format(
              "{} partial groups ({})", t.partial_groups,
              plan.partial.size() == spec.aggs.size() ? "aggregations as asked" : "a mean as a sum and a count")},
         {"combine partial groups", fmt::format("cpu x{}", threads), t.combine,
          "each piece's partial groups into the group-by sink, in slices on several threads"}});
    for (auto& n : grouper.notes) r.report.notes.push_back(std::move(n));
    r.report.notes.push_back(
        fmt::format("read into the GPU in pieces of {} bytes; partial groups combined on the CPU", R));
    return r;
  } catch (const LeaveGpu& e) {
    if (reader.rewindable()) {
      notes.note(fmt::format("{}: streamed on the CPU from the start", e.why));
      return std::nullopt;
    }
    throw InputError(
        fmt::format("{}: {} (in the piece from byte {}); a stream is read once, so group it on the CPU "
                    "(device cpu){}",
                    name, e.why, at, e.schema_helps ? " or name the column's type in the schema" : ""));
  } catch (const OutOfMemoryError& e) {
    if (!reader.rewindable()) throw;
    notes.notice(fmt::format("GPU out of memory ({}): streamed on the CPU", e.what()));
    return std::nullopt;
  }
}

}  // namespace tandem::scan
#endif
