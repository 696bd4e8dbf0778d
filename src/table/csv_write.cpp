// Writing CSV: blocks of rows formatted in parallel into buffers, written in order.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <iterator>
#include <mutex>
#include <ostream>
#include <thread>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "table/csv_scan.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/table/csv.hpp"

namespace tandem {
namespace {

using Out = fmt::memory_buffer;

bool needs_quotes(std::string_view s, char delimiter) {
  if (s.empty()) return true;                      // "" is an empty string; an empty field is a missing value
  if (s.starts_with("\xEF\xBB\xBF")) return true;  // a first name so would read as a byte order mark
  const auto edge = [](char c) { return c == ' ' || c == '\t'; };
  if (edge(s.front()) || edge(s.back())) return true;
  return std::any_of(s.begin(), s.end(), [&](char c) { return c == delimiter || c == '"' || c == '\n' || c == '\r'; });
}

void append_string(Out& out, std::string_view s, char delimiter) {
  if (!needs_quotes(s, delimiter)) {
    out.append(s);
    return;
  }
  out.push_back('"');
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

template <class T>
void append_number(Out& out, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return out.append(std::string_view("nan"));
    if (std::isinf(v)) return out.append(std::string_view(v < 0 ? "-inf" : "inf"));
  }
  fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}"), v);  // shortest round-trip for floats
}

void append_rows(Out& out, const Table& t, std::size_t begin, std::size_t end, char delimiter) {
  const auto& columns = t.columns();
  for (std::size_t i = begin; i < end; ++i) {
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const Column& c = columns[j];
      if (j) out.push_back(delimiter);
      if (!c.present(i)) continue;
      if (c.type == ColumnType::str) {
        append_string(out, c.string(i), delimiter);
        continue;
      }
      visit_numeric(c.type, [&](auto zero) { append_number(out, c.values.as<decltype(zero)>()[i]); });
    }
    out.push_back('\n');
  }
}

void check_delimiter(char delimiter) {
  if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
    throw UsageError(fmt::format("CSV delimiter '{}' (expected a byte other than a quote, CR or LF)",
                                 csv::printable(&delimiter, &delimiter + 1)));
}

}  // namespace

struct CsvPiecesWriter::Impl {
  std::ostream& out;
  char delimiter;
  bool header;  // still to be written
  std::size_t most_queued;
  int threads{default_threads()};
  std::mutex lock;
  std::condition_variable changed;
  std::deque<Out> queue;  // formatted rows in order, for the writing thread
  std::size_t queued{0};  // their bytes
  bool closing{false};
  bool finished{false};
  std::exception_ptr error;
  std::thread writing;

  Impl(std::ostream& o, char d, bool h, std::size_t q) : out(o), delimiter(d), header(h), most_queued(q) {}

  void run() {
    for (;;) {
      Out block;
      {
        std::unique_lock hold(lock);
        changed.wait(hold, [&] { return closing || !queue.empty(); });
        if (queue.empty()) return;
        block = std::move(queue.front());
        queue.pop_front();
      }
      try {
        out.write(block.data(), static_cast<std::streamsize>(block.size()));
      } catch (...) {
        const std::lock_guard hold(lock);
        if (!error) error = std::current_exception();
      }
      {
        const std::lock_guard hold(lock);
        queued -= block.size();
      }
      changed.notify_all();
    }
  }

  void push(Out block) {
    if (block.size() == 0) return;
    {
      std::unique_lock hold(lock);
      if (!writing.joinable()) writing = std::thread([this] { run(); });
      changed.wait(hold, [&] { return error || queued == 0 || queued + block.size() <= most_queued; });
      if (error) std::rethrow_exception(error);
      queued += block.size();
      queue.push_back(std::move(block));
    }
    changed.notify_all();
  }

  void stop() {
    {
      const std::lock_guard hold(lock);
      closing = true;
    }
    changed.notify_all();
    if (writing.joinable()) writing.join();
  }
};

CsvPiecesWriter::CsvPiecesWriter(std::ostream& out, char delimiter, bool header, std::size_t queued_bytes) {
  check_delimiter(delimiter);
  impl_ = std::make_unique<Impl>(out, delimiter, header, queued_bytes);
}

CsvPiecesWriter::~CsvPiecesWriter() {
  {
    const std::lock_guard hold(impl_->lock);
    impl_->queue.clear();  // unfinished: what is left is not wanted
  }
  impl_->stop();
}

void CsvPiecesWriter::write(const Table& piece) {
  Impl& w = *impl_;
  if (w.finished) throw UsageError("CSV writer: write() after finish()");
  if (piece.num_columns() == 0) return;
  if (w.header) {
    Out names;
    for (const auto& c : piece.columns()) {
      if (names.size()) names.push_back(w.delimiter);
      append_string(names, c.name, w.delimiter);
    }
    names.push_back('\n');
    w.push(std::move(names));
    w.header = false;
  }
  // Rounds of two blocks per thread formatted in parallel, each handed to the writing thread as
  // soon as its round is done: 16 threads format 10^7 rows of db-benchmark q10's result (some
  // 480 MB) in less time than one thread writes them.
  constexpr std::size_t kBlock = 16384;
  const std::size_t per_round = 2 * static_cast<std::size_t>(w.threads), rows = piece.rows();
  std::vector<Out> blocks(per_round);
  for (std::size_t first = 0; first < rows; first += kBlock * per_round) {
    parallel_for(per_round, w.threads, [&](std::size_t b) {
      blocks[b].clear();
      const std::size_t begin = std::min(rows, first + b * kBlock);
      append_rows(blocks[b], piece, begin, std::min(rows, begin + kBlock), w.delimiter);
    });
    for (Out& b : blocks) w.push(std::move(b));
    for (Out& b : blocks) b = Out();
  }
}

void CsvPiecesWriter::finish() {
  impl_->finished = true;
  impl_->stop();
  if (impl_->error) std::rethrow_exception(impl_->error);
}

void write_csv(std::ostream& out, const Table& table, char delimiter) {
  CsvPiecesWriter w(out, delimiter, true);
  w.write(table);
  w.finish();
}

void write_csv_rows(std::ostream& out, const Table& table, char delimiter) {
  CsvPiecesWriter w(out, delimiter, false);
  w.write(table);
  w.finish();
}

}  // namespace tandem
