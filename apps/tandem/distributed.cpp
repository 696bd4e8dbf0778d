#include "distributed.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/table/csv.hpp"

namespace tandem::cli {

void add_distributed_options(CLI::App& app, bool& distributed, bool* gather) {
  app.add_flag("--distributed", distributed,
               "Run as one rank of an MPI job (mpirun -np N tandem …): paths may hold {rank} and {size}; a shared "
               "input without {rank} is split between the ranks");
  if (gather)
    app.add_flag("--gather", *gather,
                 "--distributed: rank 0 writes the whole result (else each rank writes its part "
                 "to an --out holding {rank})");
}

void require_mpi() {
#if !TANDEM_HAS_MPI
  throw UsageError(
      "--distributed needs MPI, and this tandem was built without it (install libopenmpi-dev and rebuild)");
#endif
}

bool has_rank_placeholder(const std::string& path) { return path.find("{rank}") != std::string::npos; }

#if TANDEM_HAS_MPI
namespace {

// MPI for the life of the program: started once, finalised by the destructor at exit (after
// the context, which is destroyed first).
struct MpiSession {
  std::unique_ptr<dist::Context> ctx;
  MpiSession() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    }
    ctx = std::make_unique<dist::Context>(MPI_COMM_WORLD);
  }
  ~MpiSession() {
    ctx.reset();
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }
};

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

dist::Context& mpi_context() {
  static MpiSession session;
  return *session.ctx;
}

io::MappedArray read_rank_array(const dist::Context& ctx, const std::string& path, DType dtype) {
  io::MappedArray a;
  ctx.run_agreed([&] {
    a = has_rank_placeholder(path) ? io::map_array(dist::expand_rank_path(path, ctx.rank(), ctx.size()), dtype)
                                   : io::map_array_part(dist::expand_rank_path(path, ctx.rank(), ctx.size()), dtype,
                                                        std::size_t(ctx.rank()), std::size_t(ctx.size()));
  });
  return a;
}

io::CharBuffer read_rank_text(const dist::Context& ctx, const std::string& path) {
  io::CharBuffer text;
  if (has_rank_placeholder(path)) {
    ctx.run_agreed([&] { text = io::read_bytes(dist::expand_rank_path(path, ctx.rank(), ctx.size())); });
    return text;
  }
  std::uint64_t size = 0;
  ctx.run_agreed([&] { size = io::file_size(path); });
  // Equal cuts moved forward to the next white space: no word is split between two ranks.
  std::pair<std::uint64_t, std::uint64_t> range;
  ctx.run_agreed([&] {
    range = dist::record_range(size, ctx.rank(), ctx.size(), [&](std::uint64_t at) {
      constexpr std::uint64_t kStep = 1 << 16;
      for (std::uint64_t pos = at; pos < size; pos += kStep) {
        const auto bytes = io::read_bytes_range(path, pos, std::min(size, pos + kStep));
        for (std::size_t i = 0; i < bytes.size(); ++i)
          if (is_space(bytes[i])) return pos + i;
      }
      return size;
    });
  });
  ctx.run_agreed([&] { text = io::read_bytes_range(path, range.first, range.second); });
  return text;
}

namespace {

// This rank's part of a shared CSV file: equal byte ranges; each range's quote state at its start
// comes from the ranges before it (csv_quote_transitions, gathered from every rank and applied in
// order: literal quotes inside unquoted fields keep it exact), and each rank's part starts after
// the first line break outside quotes in its range. The text is the header and the part;
// `lines_skipped` the file's lines between them (for messages).
struct SharedPart {
  io::CharBuffer text;
  std::size_t lines_skipped{0};
};

SharedPart read_shared_part(const dist::Context& ctx, const std::string& path, char delimiter) {
  std::uint64_t size = 0;
  ctx.run_agreed([&] { size = io::file_size(path); });
  const int p = ctx.size(), r = ctx.rank();
  const std::uint64_t lo = size / std::uint64_t(p) * std::uint64_t(r);
  const std::uint64_t hi = r + 1 == p ? size : size / std::uint64_t(p) * std::uint64_t(r + 1);
  io::CharBuffer read;  // the byte before the range too: it says whether a quote there opens a field
  ctx.run_agreed([&] { read = io::read_bytes_range(path, lo > 0 ? lo - 1 : 0, hi); });
  const std::string_view range(read.data() + (lo > 0 ? 1 : 0), hi - lo);
  const char before = lo > 0 ? read[0] : '\n';
  // A byte-order mark at the file's start is no part of the first field.
  const std::size_t bom = lo == 0 && range.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  const std::string_view body = range.substr(bom);
  if (delimiter == 0) {  // rank 0's range starts with the header
    if (r == 0) delimiter = detect_csv_delimiter(body);
    MPI_Bcast(&delimiter, 1, MPI_CHAR, 0, ctx.comm());
  }
  const auto mine = csv_quote_transitions(body, before, delimiter);
  std::array<std::uint8_t, 3> sent{};
  for (std::size_t s = 0; s < 3; ++s) sent[s] = static_cast<std::uint8_t>(mine[s]);
  std::vector<std::uint8_t> all(3 * static_cast<std::size_t>(p));
  MPI_Allgather(sent.data(), 3, MPI_UINT8_T, all.data(), 3, MPI_UINT8_T, ctx.comm());
  std::uint8_t start = static_cast<std::uint8_t>(CsvQuoteState::outside);
  for (int q = 0; q < r; ++q) start = all[3 * static_cast<std::size_t>(q) + start];
  const std::size_t at = bom + csv_first_record_start(body, before, delimiter, static_cast<CsvQuoteState>(start));
  // just after the first line break outside quotes in the range
  const std::uint64_t first_row = at <= range.size() ? lo + at : size;
  std::vector<std::uint64_t> firsts(static_cast<std::size_t>(p));
  MPI_Allgather(&first_row, 1, MPI_UINT64_T, firsts.data(), 1, MPI_UINT64_T, ctx.comm());
  const std::uint64_t header_end = *std::min_element(firsts.begin(), firsts.end());
  auto start_of = [&](int rank) {
    if (rank == 0) return std::uint64_t{0};
    if (rank >= p) return size;
    return *std::min_element(firsts.begin() + rank, firsts.end());
  };
  const std::uint64_t begin = start_of(r), end = start_of(r + 1);
  // Line breaks of the file before each rank's rows and before the first row, summed over every
  // rank's range: a parse error then names the file's own line.
  std::vector<std::uint64_t> breaks(static_cast<std::size_t>(p) + 1, 0), total(breaks.size(), 0);
  auto breaks_before = [&](std::uint64_t at) {
    const auto n = static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(range.size(), at > lo ? at - lo : 0));
    return static_cast<std::uint64_t>(std::count(range.begin(), range.begin() + n, '\n'));
  };
  for (int q = 0; q < p; ++q) breaks[std::size_t(q)] = breaks_before(start_of(q));
  breaks[std::size_t(p)] = breaks_before(header_end);
  MPI_Allreduce(breaks.data(), total.data(), p + 1, MPI_UINT64_T, MPI_SUM, ctx.comm());
  SharedPart part;
  if (r != 0) part.lines_skipped = std::size_t(total[std::size_t(r)] - total[std::size_t(p)]);
  ctx.run_agreed([&] {
    if (r != 0) {
      part.text = io::read_bytes_range(path, 0, header_end);
      const auto body = io::read_bytes_range(path, begin, end);
      part.text.insert(part.text.end(), body.begin(), body.end());
    } else {
      part.text = io::read_bytes_range(path, begin, end);
    }
  });
  return part;
}

// Every rank's columns as rank 0's: the same number, names and order; UsageError on the first
// rank (lowest) that differs, naming the column.
void check_same_names(const dist::Context& ctx, const Table& t, const std::string& path) {
  std::string names;  // rank 0's, NUL-separated
  for (const Column& c : t.columns()) names.append(c.name).push_back('\0');
  long long length = static_cast<long long>(names.size());
  MPI_Bcast(&length, 1, MPI_LONG_LONG, 0, ctx.comm());
  std::string first(static_cast<std::size_t>(length), '\0');
  if (ctx.rank() == 0) first = names;
  MPI_Bcast(first.data(), int(length), MPI_CHAR, 0, ctx.comm());
  ctx.run_agreed([&] {
    std::size_t at = 0, c = 0;
    for (; at < first.size() && c < t.num_columns(); ++c) {
      const std::string want = first.substr(at, first.find('\0', at) - at);
      if (t.column(c).name != want)
        throw InputError(
            fmt::format("{}: column {} is '{}' here and '{}' on rank 0", path, c + 1, t.column(c).name, want));
      at += want.size() + 1;
    }
    if (at < first.size() || c < t.num_columns())
      throw InputError(fmt::format("{}: {} columns here, {} on rank 0", path, t.num_columns(),
                                   std::count(first.begin(), first.end(), '\0')));
  });
}

// Types inferred from one part may be narrower than another part's: every rank takes the widest
// (i64 < f64 < str), as one reader of the whole would; a column with no values in a part does not
// vote. The text is read again where a type widens.
Table widen_to_agreed(const dist::Context& ctx, Table t, const io::CharBuffer& text, const CsvOptions& options,
                      const std::string& source) {
  std::vector<int> mine(t.num_columns(), -1), widest(t.num_columns(), -1);
  for (std::size_t c = 0; c < t.num_columns(); ++c) {
    const Column& col = t.column(c);
    if (col.missing_count() != col.length) mine[c] = col.type == ColumnType::str ? 2 : is_floating(col.type) ? 1 : 0;
  }
  MPI_Allreduce(mine.data(), widest.data(), int(mine.size()), MPI_INT, MPI_MAX, ctx.comm());
  CsvOptions again = options;
  bool differs = false;
  for (std::size_t c = 0; c < t.num_columns(); ++c) {
    const Column& col = t.column(c);
    const bool given = std::any_of(options.schema.begin(), options.schema.end(),
                                   [&](const CsvColumnType& s) { return s.name == col.name; });
    if (given) continue;
    const ColumnType want = widest[c] == 0 ? ColumnType::i64 : widest[c] == 1 ? ColumnType::f64 : ColumnType::str;
    again.schema.push_back({col.name, want});
    differs |= want != col.type;
  }
  ctx.run_agreed([&] {
    if (differs) t = read_csv_text(std::string_view(text.data(), text.size()), again, source);
  });
  return t;
}

}  // namespace

Table read_rank_csv(const dist::Context& ctx, const std::string& path, const CsvOptions& options) {
  const std::string source = dist::expand_rank_path(path, ctx.rank(), ctx.size());
  io::CharBuffer text;
  CsvOptions mine = options;
  if (has_rank_placeholder(path)) {
    ctx.run_agreed([&] { text = io::read_bytes(source, options.threads); });
  } else {
    SharedPart part = read_shared_part(ctx, path, options.delimiter);
    text = std::move(part.text);
    mine.lines_skipped = part.lines_skipped;
  }
  Table t;
  ctx.run_agreed([&] { t = read_csv_text(std::string_view(text.data(), text.size()), mine, source); });
  check_same_names(ctx, t, has_rank_placeholder(path) ? source : path);
  return widen_to_agreed(ctx, std::move(t), text, mine, source);
}

std::string rank_output(const dist::Context& ctx, const std::string& path, bool gather, bool can_gather) {
  if (gather) return ctx.rank() == 0 ? path : std::string();
  if (ctx.size() > 1 && !has_rank_placeholder(path))
    throw UsageError(
        fmt::format("--out {}: with --distributed each rank writes its part, so the path needs {{rank}} "
                    "(e.g. out-{{rank}}.csv){}",
                    path, can_gather ? ", or give --gather" : ""));
  return dist::expand_rank_path(path, ctx.rank(), ctx.size());
}

namespace {

// Removes an output this rank put in place (a regular file or a table folder; never standard
// output or a device written in place).
void remove_placed(const std::string& path) {
  std::error_code ec;
  if (path.empty() || path == "-") return;
  const auto st = std::filesystem::symlink_status(path, ec);
  if (std::filesystem::is_regular_file(st)) std::filesystem::remove(path, ec);
  else if (std::filesystem::is_directory(st)) std::filesystem::remove_all(path, ec);
}

// Removes what this rank put at `path` and gives back what was there before.
void put_back(const std::string& path, io::PreviousOutput* previous) {
  remove_placed(path);
  if (previous == nullptr) return;
  try {
    previous->restore();
  } catch (const std::exception&) {  // the run's first error is the one to report; the old content stays kept
  }
}

}  // namespace

void write_then_commit(const dist::Context& ctx, const std::function<void()>& write, io::AtomicOutput* first,
                       io::AtomicOutput* second, const std::string& placed) {
  // What each output path held before: given back if another rank fails after this one replaced it.
  std::unique_ptr<io::PreviousOutput> previous_first, previous_second, previous_placed;
  bool written = false, committing = false;
  try {
    ctx.run_agreed([&] {
      if (first) previous_first = std::make_unique<io::PreviousOutput>(first->path());
      if (second) previous_second = std::make_unique<io::PreviousOutput>(second->path());
      if (!placed.empty()) previous_placed = std::make_unique<io::PreviousOutput>(placed);
      write();
      written = true;
    });
    ctx.run_agreed([&] {  // every rank's writes checked before any rank renames
      if (first) first->finish();
      if (second) second->finish();
    });
    ctx.run_agreed([&] {
      committing = true;  // from here an output may be in place, even if the next rename fails
      if (first && second) io::AtomicOutput::commit_all({first, second});
      else if (first) first->commit();
    });
  } catch (...) {
    // Another rank failed after this one put its outputs in place: all ranks or none, and the
    // paths hold again what they held before.
    if (written) put_back(placed, previous_placed.get());
    if (committing) {
      if (first) put_back(first->path(), previous_first.get());
      if (second) put_back(second->path(), previous_second.get());
    }
    throw;
  }
}
#endif

}  // namespace tandem::cli
