#include "scan/csv_stream.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "table/csv_dialect.hpp"
#include "table/csv_scan.hpp"
#include "tandem/core/detail/huge_pages.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::scan {

using csv::Cut;
using csv::cut_piece;
using csv::Field;
using csv::last_record_end;
using csv::read_field;
using csv::Stop;
namespace {

constexpr std::size_t kPadding = 64;  // readable bytes after a chunk for the 64-byte masks

// A chunk buffer. Those of a huge page or more are on huge pages (tandem/core/detail/huge_pages.hpp):
// their first touch costs one page fault per 2 MiB. A consumer of records may keep the bytes
// (a copy of `data`); the buffer then takes fresh memory for its next chunk.
struct ScanBuffer {
  std::shared_ptr<char[]> data;
  std::size_t capacity{0};  // usable bytes (padding comes on top)
  std::size_t filled{0};
  void reserve(std::size_t n) {
    if (n <= capacity) return;
    std::shared_ptr<char[]> bigger;
    if (n + kPadding >= detail::kHugePage) {
      const std::size_t bytes = detail::huge_page_bytes(n + kPadding);
      bigger = std::shared_ptr<char[]>(static_cast<char*>(detail::allocate_huge_pages(bytes)),
                                       [](char* p) { detail::free_huge_pages(p); });
      n = bytes - kPadding;  // the rest of the last huge page, which the padding touches anyway
    } else {
      bigger = std::make_shared_for_overwrite<char[]>(n + kPadding);  // filled by reads: no zeroing pass
    }
    if (filled) std::memcpy(bigger.get(), data.get(), filled);
    data = std::move(bigger);
    capacity = n;
  }
  // Lets go of bytes a consumer kept: the next reserve takes fresh memory.
  void release_if_kept() {
    if (data.use_count() > 1) data.reset(), capacity = filled = 0;
  }
};

// The source of an input already in memory: nothing more to read.
struct Drained : ByteSource {
  explicit Drained(const std::string& path) {
    name = path == "-" ? "<stdin>" : path;
    rewindable = true;
  }
  std::size_t read(char*, std::size_t) override { return 0; }
};

// Fills b from the source up to its capacity, a regular file by up to `parts` threads at once;
// false at the end of the input.
bool fill(ByteSource& src, ScanBuffer& b, int parts = 1) {
  const std::size_t got = src.read_full_in_parts(b.data.get() + b.filled, b.capacity - b.filled, parts);
  b.filled += got;
  return b.filled == b.capacity;
}

[[noreturn]] void raise(const std::string& source, std::size_t line, std::size_t column,
                        const std::vector<std::string>& names, const std::string& what) {
  std::string where = fmt::format("{}:{}", source, line);
  if (column > 0 && column <= names.size()) where += fmt::format(": column {} ('{}')", column, names[column - 1]);
  else if (column > 0) where += fmt::format(": column {}", column);
  throw InputError(fmt::format("{}: {}", where, what));
}

// The header record at the front of b (reading more until it is whole).
Header read_header(ByteSource& src, ScanBuffer& b, char delimiter) {
  bool more = fill(src, b);
  for (;;) {
    const char* begin = b.data.get();
    const char* end = begin + b.filled;
    const char* p = begin;
    if (end - p >= 3 && std::memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
    if (p == end && !more)
      throw InputError(fmt::format("{}: empty file (expected a header row naming the columns)", src.name));
    Header h;
    h.delimiter = delimiter ? delimiter : csv::detect_delimiter(p, end);
    if (h.delimiter == '"' || h.delimiter == '\n' || h.delimiter == '\r')
      throw UsageError(fmt::format("CSV delimiter '{}' (expected a byte other than a quote, CR or LF)",
                                   csv::printable(&h.delimiter, &h.delimiter + 1)));
    if (more && last_record_end(p, end, h.delimiter) == p) {  // the header is not whole yet
      b.reserve(b.capacity * 2);
      more = fill(src, b);
      continue;
    }
    Field f;
    for (Stop s = Stop::delimiter; s == Stop::delimiter;) {
      s = read_field(p, end, h.delimiter, f);
      if (is_error(s)) raise(src.name, 1, h.names.size() + 1, {}, "malformed header field");
      std::string name;
      csv::append_value(f, name);
      h.names.push_back(std::move(name));
    }
    h.bytes = static_cast<std::size_t>(p - begin);
    h.text.assign(begin, p);
    h.newlines = static_cast<std::size_t>(std::count(begin, p, '\n'));
    std::unordered_map<std::string, std::size_t> seen;
    for (std::size_t j = 0; j < h.names.size(); ++j) {
      if (h.names[j].empty()) raise(src.name, 1, j + 1, {}, "the header gives this column no name");
      const auto [it, fresh] = seen.emplace(h.names[j], j);
      if (!fresh)
        raise(src.name, 1, j + 1, {}, fmt::format("the header names column {} '{}' again", it->second + 1, h.names[j]));
    }
    return h;
  }
}

std::vector<ColumnPlan> plan_columns(const Header& h, const std::vector<std::string>& columns, const CsvSchema& schema,
                                     const std::string& source) {
  std::unordered_map<std::string_view, std::size_t> column_of;               // linear in the header, not quadratic
  for (std::size_t j = h.names.size(); j-- > 0;) column_of[h.names[j]] = j;  // the first of equal names
  auto index_of = [&](const std::string& name) {
    const auto it = column_of.find(name);
    return it == column_of.end() ? h.names.size() : it->second;
  };
  for (const auto& s : schema)
    if (index_of(s.name) == h.names.size())
      throw UsageError(fmt::format("{}: the schema names column '{}', which the header lacks (columns: {})", source,
                                   csv::shown_name(s.name), csv::listed_names(h.names)));
  std::vector<ColumnPlan> plans;
  for (const auto& c : columns) {
    const std::size_t j = index_of(c);
    if (j == h.names.size())
      throw UsageError(fmt::format("no column '{}' (columns: {})", csv::shown_name(c), csv::listed_names(h.names)));
    ColumnPlan p{j, c, ColumnType::i64, false};
    for (const auto& s : schema)
      if (s.name == c) p.type = s.type, p.fixed = true;
    plans.push_back(std::move(p));
  }
  return plans;
}

ColumnType wider(ColumnType a, ColumnType b) {
  auto rank = [](ColumnType t) { return t == ColumnType::i64 ? 0 : t == ColumnType::f64 ? 1 : 2; };
  return rank(a) >= rank(b) ? a : b;
}

// The types of the first `rows` records of the body in [b, e) (e followed by padding).
void sample_types(const char* b, const char* e, bool at_end, std::size_t rows, ChunkInput in,
                  std::vector<ColumnPlan>& plans) {
  const char* cut = b;
  for (std::size_t n = 0; n < rows && cut < e; ++n) {
    const void* nl = std::memchr(cut, '\n', static_cast<std::size_t>(e - cut));
    if (!nl) {
      cut = at_end ? e : cut;
      break;
    }
    cut = static_cast<const char*>(nl) + 1;
  }
  if (cut < e) cut = last_record_end(b, cut, in.delimiter);
  if (cut == b) return;
  std::string copy(b, cut);  // padded: the masks read past the sample's end
  copy.append(kPadding, '\0');
  in.begin = copy.data();
  in.end = copy.data() + (cut - b);
  in.plans = &plans;
  const ChunkResult r = parse_chunk(in);
  if (r.status == ChunkStatus::error) return;  // the scan reports it where it is
  for (std::size_t k = 0; k < plans.size(); ++k) plans[k].type = r.types[k];
}

struct Job {
  std::size_t index{0};
  ScanBuffer* buffer{nullptr};
  std::size_t begin{0}, end{0};
  std::size_t offset{0};  // bytes of the input before the chunk
};

struct ChunkOutcome {
  ChunkStatus status{ChunkStatus::ok};
  std::size_t newlines{0}, rows{0};
  bool fast{true};
  std::size_t error_newlines{0}, error_column{0};
  std::string error_what;
};

// One pass over the body: the reader on the calling thread, the parsers on `threads` workers.
class Pass {
 public:
  Pass(ChunkInput in, int threads, RecordConsumer consume)
      : in_(in), threads_(threads), consume_(std::move(consume)), wanted_(in.plans->size()) {
    for (std::size_t k = 0; k < wanted_.size(); ++k) wanted_[k] = (*in.plans)[k].type;
  }

  // Reads from `src`; `first` holds the start of the input with the body from `body` on (with
  // `in_place`, all of it: the chunks are cut from it, not read).
  void run(ByteSource& src, ScanBuffer first, std::size_t body, bool more, std::size_t chunk_bytes,
           const std::function<void(std::size_t)>& progress, bool in_place);

  std::vector<ChunkOutcome> outcomes;
  std::vector<ColumnType> wanted_types() const { return wanted_; }
  bool widened() const { return widened_; }
  std::size_t bytes{0};

 private:
  void work();
  void parse(const Job& j);
  void read_all(ByteSource& src, bool more, std::size_t body, std::size_t chunk_bytes,
                const std::function<void(std::size_t)>& progress);
  void cut_in_place(const ScanBuffer& whole, std::size_t body, std::size_t chunk_bytes);
  ScanBuffer* take_free();
  void give_back(ScanBuffer* b);

  ChunkInput in_;
  int threads_;
  RecordConsumer consume_;
  std::vector<ColumnType> wanted_;
  std::mutex m_;
  std::condition_variable jobs_cv_, free_cv_;
  std::deque<Job> jobs_;
  std::vector<ScanBuffer*> free_;
  std::vector<std::unique_ptr<ScanBuffer>> buffers_;  // the first holds the input in place
  bool done_{false};
  std::atomic<bool> widened_{false}, failed_{false};
  std::exception_ptr consumer_error_;
};

ScanBuffer* Pass::take_free() {
  std::unique_lock lock(m_);
  free_cv_.wait(lock, [&] { return !free_.empty(); });
  ScanBuffer* b = free_.back();
  free_.pop_back();
  return b;
}

void Pass::give_back(ScanBuffer* b) {
  {
    std::lock_guard lock(m_);
    free_.push_back(b);
  }
  free_cv_.notify_one();
}

void Pass::parse(const Job& j) {
  ChunkInput in = in_;
  in.begin = j.buffer->data.get() + j.begin;
  in.end = j.buffer->data.get() + j.end;
  ChunkResult r = parse_chunk(in);
  ChunkOutcome o;
  o.status = r.status;
  o.rows = r.rows;
  o.fast = r.used_fast_path;
  if (r.status == ChunkStatus::error) {
    o.error_newlines = r.error_newlines;
    o.error_column = r.error_column;
    o.error_what = std::move(r.error_what);
    failed_ = true;
  } else {
    o.newlines = r.newlines;
  }
  // A consumer of records reads the chunk's text: the buffer goes back after it.
  if (!in.records) give_back(j.buffer);
  if (r.status == ChunkStatus::widened) {
    std::lock_guard lock(m_);
    for (std::size_t k = 0; k < wanted_.size(); ++k) wanted_[k] = wider(wanted_[k], r.types[k]);
    widened_ = true;
  }
  if (r.status == ChunkStatus::ok && !widened_ && !failed_) {
    try {
      const ChunkRecords records{in.begin, static_cast<std::size_t>(in.end - in.begin), &r.record_starts,
                                 &r.record_ends, in.records ? j.buffer->data : nullptr};
      consume_(j.index, r.table, records);
    } catch (...) {
      std::lock_guard lock(m_);
      if (!consumer_error_) consumer_error_ = std::current_exception();
      failed_ = true;
    }
  }
  if (in.records) {
    j.buffer->release_if_kept();
    give_back(j.buffer);
  }
  std::lock_guard lock(m_);
  outcomes[j.index] = std::move(o);
}

void Pass::work() {
  for (;;) {
    Job j;
    {
      std::unique_lock lock(m_);
      jobs_cv_.wait(lock, [&] { return done_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      j = jobs_.front();
      jobs_.pop_front();
    }
    try {
      parse(j);
    } catch (...) {
      std::lock_guard lock(m_);
      if (!consumer_error_) consumer_error_ = std::current_exception();
      failed_ = true;
    }
  }
}

void Pass::run(ByteSource& src, ScanBuffer first, std::size_t body, bool more, std::size_t chunk_bytes,
               const std::function<void(std::size_t)>& progress, bool in_place) {
  for (int i = 0; i < threads_ + 2; ++i) {
    buffers_.push_back(std::make_unique<ScanBuffer>());
    if (i > 0) free_.push_back(buffers_.back().get());
  }
  *buffers_[0] = std::move(first);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads_; ++i) workers.emplace_back([this] { work(); });
  std::exception_ptr read_error;
  try {
    if (in_place) cut_in_place(*buffers_[0], body, chunk_bytes);
    else read_all(src, more, body, chunk_bytes, progress);
  } catch (...) {
    read_error = std::current_exception();
  }
  {
    std::lock_guard lock(m_);
    done_ = true;
  }
  jobs_cv_.notify_all();
  for (auto& w : workers) w.join();
  if (read_error) std::rethrow_exception(read_error);
  if (consumer_error_) std::rethrow_exception(consumer_error_);
}

// The reader: fills buffers in input order, cuts each after its last record and queues it.
void Pass::read_all(ByteSource& src, bool more, std::size_t body, std::size_t chunk_bytes,
                    const std::function<void(std::size_t)>& progress) {
  ScanBuffer* cur = buffers_[0].get();
  std::size_t start = body, offset = body, index = 0;
  // One reader thread copies a file from the page cache at some 6 GB/s, less than 16 parsers
  // take: from 8 parsers on, a file's buffers are read by a thread per 4 parsers (at most 4).
  const int parts = std::clamp(threads_ / 4, 1, 4);
  Stopwatch clock;
  double last_report = 0;
  for (;;) {
    const Cut cut = cut_piece(cur->data.get() + start, cur->filled - start, !more, in_.delimiter);
    if (cut.grow) {
      cur->reserve(cur->capacity * 2);
      more = fill(src, *cur, parts);
      continue;
    }
    const bool last = !more;
    ScanBuffer* next = last ? nullptr : take_free();
    if (next) {
      next->reserve(std::max(chunk_bytes, cut.carry * 2));
      std::memcpy(next->data.get(), cur->data.get() + start + cut.take, cut.carry);
      next->filled = cut.carry;
    }
    std::memset(cur->data.get() + cur->filled, 0, kPadding);
    if (cut.take > 0) {
      std::lock_guard lock(m_);
      outcomes.emplace_back();
      jobs_.push_back({index++, cur, start, start + cut.take, offset});
    } else {
      give_back(cur);
    }
    jobs_cv_.notify_one();
    offset += cut.take;
    if (last || failed_) {
      if (next) give_back(next);
      break;
    }
    cur = next;
    start = 0;
    more = fill(src, *cur, parts);
    if (progress && clock.seconds() - last_report > 0.5) {
      last_report = clock.seconds();
      progress(offset);
    }
  }
  bytes = offset;
}

// The input already in memory: each chunk a view of it (no copy), but for the input's last
// bytes, copied so that the masks find their padding.
void Pass::cut_in_place(const ScanBuffer& whole, std::size_t body, std::size_t chunk_bytes) {
  const std::size_t end = whole.filled;
  std::size_t start = body, index = 0;
  while (start < end && !failed_) {
    std::size_t window = std::min(chunk_bytes, end - start);
    Cut cut = cut_piece(whole.data.get() + start, window, start + window == end, in_.delimiter);
    while (cut.grow) {  // no record ends in the window
      window = std::min(window * 2, end - start);
      cut = cut_piece(whole.data.get() + start, window, start + window == end, in_.delimiter);
    }
    auto view = std::make_unique<ScanBuffer>();
    if (start + cut.take + kPadding <= end) {
      view->data = std::shared_ptr<char[]>(whole.data, whole.data.get() + start);
      view->capacity = cut.take;
    } else {
      view->reserve(cut.take);
      std::memcpy(view->data.get(), whole.data.get() + start, cut.take);
      std::memset(view->data.get() + cut.take, 0, kPadding);
    }
    view->filled = cut.take;
    {
      std::lock_guard lock(m_);
      outcomes.emplace_back();
      jobs_.push_back({index++, view.get(), 0, cut.take, start});
      buffers_.push_back(std::move(view));
    }
    jobs_cv_.notify_one();
    start += cut.take;
  }
  bytes = start;
}

}  // namespace

namespace {

[[noreturn]] void raise_first_error(const Pass& pass, const Header& h, const std::string& source) {
  std::size_t line = 1 + h.newlines;
  for (const auto& o : pass.outcomes) {
    if (o.status == ChunkStatus::error) raise(source, line + o.error_newlines, o.error_column, h.names, o.error_what);
    line += o.newlines;
  }
  throw Error(fmt::format("{}: a chunk failed without an error", source));
}

std::string type_changes(const std::vector<ColumnPlan>& plans, const std::vector<ColumnType>& wanted) {
  std::string s;
  for (std::size_t k = 0; k < plans.size(); ++k)
    if (plans[k].type != wanted[k])
      s += fmt::format("{}'{}' holds a value that is not {} ({} fits it)", s.empty() ? "" : "; ", plans[k].name,
                       with_article(plans[k].type), to_string(wanted[k]));
  return s;
}

}  // namespace

namespace {

StreamSummary scan(const std::string& path, const std::vector<std::string>& columns, const StreamOptions& options,
                   bool records, const std::function<RecordConsumer()>& fresh_consumer) {
  Stopwatch clock;
  StreamSummary sum;
  sum.threads = options.threads > 0 ? options.threads : default_threads();
  sum.chunk_bytes = options.chunk_bytes ? options.chunk_bytes : (std::size_t{8} << 20) - kPadding;  // 8 MiB in all
  sum.simd = detected_simd_level();
  for (;;) {
    const bool in_place = options.text != nullptr;
    auto src = in_place ? std::make_unique<Drained>(path) : open_source(path);
    ScanBuffer first;
    if (in_place) {  // one byte of room the source never fills: the input has ended
      first.data = options.text;
      first.filled = options.text_bytes;
      first.capacity = options.text_bytes + 1;
    } else {
      first.reserve(std::max<std::size_t>(sum.chunk_bytes, 64 << 10));
    }
    const Header h = read_header(*src, first, options.delimiter);
    const bool more = first.filled == first.capacity;
    if (!in_place) std::memset(first.data.get() + first.filled, 0, kPadding);
    std::vector<int> slot(h.names.size(), -1);
    if (sum.passes == 1) {
      sum.plans = plan_columns(h, columns, options.schema, src->name);
      ChunkInput sample{nullptr, nullptr, h.delimiter, h.names.size(), &sum.plans, &slot, sum.simd};
      for (std::size_t k = 0; k < sum.plans.size(); ++k) slot[sum.plans[k].index] = static_cast<int>(k);
      sample_types(first.data.get() + h.bytes, first.data.get() + first.filled, !more, options.sample_rows, sample,
                   sum.plans);
    }
    for (std::size_t k = 0; k < sum.plans.size(); ++k) slot[sum.plans[k].index] = static_cast<int>(k);
    const ChunkInput in{nullptr, nullptr, h.delimiter, h.names.size(), &sum.plans, &slot, sum.simd, records};
    Pass pass(in, sum.threads, fresh_consumer());
    pass.run(*src, std::move(first), h.bytes, more, sum.chunk_bytes, options.progress, in_place);
    for (const auto& o : pass.outcomes)
      if (o.status == ChunkStatus::error) raise_first_error(pass, h, src->name);
    if (pass.widened()) {
      const auto wanted = pass.wanted_types();
      if (!src->rewindable)
        throw InputError(
            fmt::format("{}: after the first {} rows, from which the column types were inferred: {}; "
                        "{} cannot be read twice, so name the types in the schema",
                        src->name, options.sample_rows, type_changes(sum.plans, wanted), src->name));
      for (std::size_t k = 0; k < sum.plans.size(); ++k) sum.plans[k].type = wanted[k];
      ++sum.passes;
      continue;
    }
    sum.chunks = pass.outcomes.size();
    for (const auto& o : pass.outcomes) {
      sum.rows += o.rows;
      sum.fast_chunks += o.fast;
    }
    sum.bytes = pass.bytes;
    sum.columns_read = sum.plans.size();
    sum.columns_total = h.names.size();
    sum.header_text = h.text;
    sum.seconds = clock.seconds();
    return sum;
  }
}

}  // namespace

StreamSummary scan_csv(const std::string& path, const std::vector<std::string>& columns, const StreamOptions& options,
                       const std::function<ChunkConsumer()>& fresh_consumer) {
  return scan(path, columns, options, false, [&]() -> RecordConsumer {
    return [consume = fresh_consumer()](std::size_t index, const Table& chunk, const ChunkRecords&) {
      consume(index, chunk);
    };
  });
}

StreamSummary scan_csv_records(const std::string& path, const std::vector<std::string>& columns,
                               const StreamOptions& options, const std::function<RecordConsumer()>& fresh_consumer) {
  return scan(path, columns, options, true, fresh_consumer);
}

}  // namespace tandem::scan
