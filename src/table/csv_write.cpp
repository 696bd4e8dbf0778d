// Writing CSV: blocks of rows formatted in parallel into buffers, written in order.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <ostream>

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

}  // namespace

void write_csv(std::ostream& out, const Table& table, char delimiter) {
  if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
    throw UsageError(fmt::format("CSV delimiter '{}' (expected a byte other than a quote, CR or LF)",
                                 csv::printable(&delimiter, &delimiter + 1)));
  if (table.num_columns() == 0) return;
  Out header;
  for (const auto& c : table.columns()) {
    if (header.size()) header.push_back(delimiter);
    append_string(header, c.name, delimiter);
  }
  header.push_back('\n');
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  write_csv_rows(out, table, delimiter);
}

void write_csv_rows(std::ostream& out, const Table& table, char delimiter) {
  if (table.num_columns() == 0) return;
  // Rounds of two blocks per thread formatted in parallel; the round before is written, in row
  // order, as one more task of the round, so that one thread writes while the others format
  // (10^7 rows of db-benchmark q10's result: some 480 MB, whose writing alone took as long as 16
  // threads' formatting).
  constexpr std::size_t kBlock = 16384;
  const int threads = default_threads();
  const std::size_t per_round = 2 * static_cast<std::size_t>(threads);
  std::vector<Out> rounds[2] = {std::vector<Out>(per_round), std::vector<Out>(per_round)};
  const auto write = [&out](const std::vector<Out>& blocks) {
    for (const auto& b : blocks) out.write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  const std::size_t rows = table.rows();
  std::size_t r = 0;
  for (std::size_t first = 0; first < rows; first += kBlock * per_round, ++r) {
    std::vector<Out>& blocks = rounds[r % 2];
    const std::vector<Out>* last = r > 0 ? &rounds[(r + 1) % 2] : nullptr;
    parallel_for(per_round + 1, threads, [&](std::size_t task) {
      if (task == 0) {
        if (last) write(*last);
        return;
      }
      Out& b = blocks[task - 1];
      b.clear();
      const std::size_t begin = std::min(rows, first + (task - 1) * kBlock);
      append_rows(b, table, begin, std::min(rows, begin + kBlock), delimiter);
    });
  }
  if (r > 0) write(rounds[(r + 1) % 2]);
}

}  // namespace tandem
