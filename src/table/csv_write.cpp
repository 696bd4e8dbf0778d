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
  // Rounds of one block per thread: formatted in parallel, written in row order.
  constexpr std::size_t kBlock = 16384;
  const int threads = default_threads();
  std::vector<Out> blocks(static_cast<std::size_t>(threads));
  const std::size_t rows = table.rows();
  for (std::size_t first = 0; first < rows; first += kBlock * blocks.size()) {
    parallel_for(blocks.size(), threads, [&](std::size_t b) {
      blocks[b].clear();
      const std::size_t begin = std::min(rows, first + b * kBlock);
      append_rows(blocks[b], table, begin, std::min(rows, begin + kBlock), delimiter);
    });
    for (const auto& b : blocks) out.write(b.data(), static_cast<std::streamsize>(b.size()));
  }
}

}  // namespace tandem
