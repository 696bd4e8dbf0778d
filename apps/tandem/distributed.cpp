#include "distributed.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

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

Table read_rank_csv(const dist::Context& ctx, const std::string& path, const CsvOptions& options) {
  if (has_rank_placeholder(path)) {
    Table t;
    ctx.run_agreed([&] { t = read_csv(dist::expand_rank_path(path, ctx.rank(), ctx.size()), options); });
    return t;
  }
  // A shared file: equal byte ranges; the quote state at each range's start comes from the
  // parity of the quotes before it (RFC 4180 doubles quotes inside fields, so parity is exact);
  // each rank's part starts after the first line break outside quotes in its range.
  std::uint64_t size = 0;
  ctx.run_agreed([&] { size = io::file_size(path); });
  const int p = ctx.size(), r = ctx.rank();
  const std::uint64_t lo = size / std::uint64_t(p) * std::uint64_t(r);
  const std::uint64_t hi = r + 1 == p ? size : size / std::uint64_t(p) * std::uint64_t(r + 1);
  io::CharBuffer range;
  ctx.run_agreed([&] { range = io::read_bytes_range(path, lo, hi); });
  int quotes = int(std::count(range.begin(), range.end(), '"') & 1), before = 0;
  MPI_Exscan(&quotes, &before, 1, MPI_INT, MPI_BXOR, ctx.comm());
  if (r == 0) before = 0;
  bool inside = before != 0;
  std::uint64_t first_row = size;  // just after the first line break outside quotes in the range
  for (std::size_t i = 0; i < range.size(); ++i) {
    if (range[i] == '"') inside = !inside;
    else if (range[i] == '\n' && !inside) {
      first_row = lo + i + 1;
      break;
    }
  }
  std::vector<std::uint64_t> firsts(static_cast<std::size_t>(p));
  MPI_Allgather(&first_row, 1, MPI_UINT64_T, firsts.data(), 1, MPI_UINT64_T, ctx.comm());
  const std::uint64_t header_end = *std::min_element(firsts.begin(), firsts.end());
  auto start_of = [&](int rank) {
    if (rank == 0) return std::uint64_t{0};
    if (rank >= p) return size;
    return *std::min_element(firsts.begin() + rank, firsts.end());
  };
  const std::uint64_t begin = start_of(r), end = start_of(r + 1);
  Table t;
  io::CharBuffer text;
  const std::string source = r == 0 ? path : fmt::format("{} (the rows from byte {}, after its header)", path, begin);
  ctx.run_agreed([&] {
    if (r != 0) {
      text = io::read_bytes_range(path, 0, header_end);
      const auto body = io::read_bytes_range(path, begin, end);
      text.insert(text.end(), body.begin(), body.end());
    } else {
      text = io::read_bytes_range(path, begin, end);
    }
    t = read_csv_text(std::string_view(text.data(), text.size()), options, source);
  });
  // Types inferred from one part may be narrower than another part's: agree on the widest
  // (i64 < f64 < str); a column with no values in a part does not vote.
  std::vector<int> mine(t.num_columns(), -1), widest(t.num_columns(), -1);
  for (std::size_t c = 0; c < t.num_columns(); ++c) {
    const Column& col = t.column(c);
    if (col.missing_count() != col.length) mine[c] = col.type == ColumnType::str ? 2 : is_floating(col.type) ? 1 : 0;
  }
  ctx.run_agreed([&] {
    int columns = int(mine.size()), least = 0, most = 0;
    MPI_Allreduce(&columns, &least, 1, MPI_INT, MPI_MIN, ctx.comm());
    MPI_Allreduce(&columns, &most, 1, MPI_INT, MPI_MAX, ctx.comm());
    if (least != most)
      throw InputError(fmt::format("{}: the parts read by the ranks have {} to {} columns", path, least, most));
  });
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

std::string rank_output(const dist::Context& ctx, const std::string& path, bool gather) {
  if (gather) return ctx.rank() == 0 ? path : std::string();
  if (ctx.size() > 1 && !has_rank_placeholder(path))
    throw UsageError(
        fmt::format("--out {}: with --distributed each rank writes its part, so the path needs {{rank}} "
                    "(e.g. out-{{rank}}.csv), or give --gather",
                    path));
  return dist::expand_rank_path(path, ctx.rank(), ctx.size());
}

void write_then_commit(const dist::Context& ctx, const std::function<void()>& write, io::AtomicOutput* first,
                       io::AtomicOutput* second) {
  ctx.run_agreed(write);
  ctx.run_agreed([&] {
    if (first && second) io::AtomicOutput::commit_all({first, second});
    else if (first) first->commit();
  });
}
#endif

}  // namespace tandem::cli
