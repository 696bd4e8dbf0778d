// Writing CSV: blocks of rows formatted in parallel into buffers, written in order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
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

// The most characters a number of type T takes: a 64-bit integer 20, a double's shortest
// round-trip form 24 ("-2.2250738585072014e-308"), a float's 15.
template <class T>
constexpr std::size_t kMaxWidth = std::is_floating_point_v<T> ? 24 : std::numeric_limits<T>::digits10 + 2;

template <class T>
char* put_number(char* p, T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return std::copy_n("nan", 3, p);
    if (std::isinf(v)) return v < 0 ? std::copy_n("-inf", 4, p) : std::copy_n("inf", 3, p);
  }
  return fmt::format_to(p, FMT_COMPILE("{}"), v);  // shortest round-trip for floats
}

// Whether any byte of s is the delimiter, a quote or a line break, 16 bytes at a time.
bool any_special(const char* s, std::size_t n, char delimiter) {
  using V16 = char __attribute__((vector_size(16)));
  const V16 d = V16{} + delimiter, q = V16{} + '"', lf = V16{} + '\n', cr = V16{} + '\r';
  V16 found{};
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V16 x;
    std::memcpy(&x, s + i, 16);
    found |= (x == d) | (x == q) | (x == lf) | (x == cr);
  }
  bool any = false;
  for (int k = 0; k < 16; ++k) any |= found[k] != 0;
  for (; i < n; ++i) any |= s[i] == delimiter || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
  return any;
}

// One column as a block of rows reads it, its type and buffers looked up once per block.
struct BlockColumn {
  ColumnType type;
  const std::uint8_t* validity;  // nullptr: every row present
  const std::byte* values;
  const std::uint64_t* offsets;  // strings
  bool plain;                    // strings: none in the block needs quotes
};

// Whether none of the strings of rows [begin, end) needs quotes; checked once for the block, so
// that each row's string is copied as it is.
bool plain_strings(const Column& c, std::size_t begin, std::size_t end, char delimiter) {
  const auto* o = c.offsets.as<std::uint64_t>().data();
  const char* bytes = reinterpret_cast<const char*>(c.values.data());
  if (any_special(bytes + o[begin], o[end] - o[begin], delimiter)) return false;
  for (std::size_t i = begin; i < end; ++i) {
    if (!c.present(i)) continue;
    const std::string_view s(bytes + o[i], o[i + 1] - o[i]);
    if (s.empty() || s.front() == ' ' || s.front() == '\t' || s.back() == ' ' || s.back() == '\t' ||
        s.starts_with("\xEF\xBB\xBF"))
      return false;
  }
  return true;
}

// Rows [begin, end) appended to out. The block's largest size is reserved first so that cells
// are written through a pointer, without a capacity check per character.
void append_rows(Out& out, const Table& t, std::size_t begin, std::size_t end, char delimiter) {
  const auto& columns = t.columns();
  std::vector<BlockColumn> cols;
  std::size_t bound = (end - begin) * (columns.size() + 1);  // delimiters and line feeds
  for (const Column& c : columns) {
    BlockColumn b{c.type, c.validity.empty() ? nullptr : reinterpret_cast<const std::uint8_t*>(c.validity.data()),
                  c.values.data(), nullptr, false};
    if (c.type == ColumnType::str) {
      b.offsets = c.offsets.as<std::uint64_t>().data();
      b.plain = plain_strings(c, begin, end, delimiter);
      const std::size_t bytes = b.offsets[end] - b.offsets[begin];
      bound += b.plain ? bytes : 2 * bytes + 2 * (end - begin);  // quoted: every byte a quote at worst
    } else {
      bound += (end - begin) * visit_numeric(c.type, [](auto zero) { return kMaxWidth<decltype(zero)>; });
    }
    cols.push_back(b);
  }
  const std::size_t at = out.size();
  out.resize(at + bound);
  char* p = out.data() + at;
  for (std::size_t i = begin; i < end; ++i) {
    for (std::size_t j = 0; j < cols.size(); ++j) {
      const BlockColumn& c = cols[j];
      if (j) *p++ = delimiter;
      if (c.validity && !((c.validity[i >> 3] >> (i & 7)) & 1u)) continue;
      switch (c.type) {
        case ColumnType::str: {
          const std::string_view s(reinterpret_cast<const char*>(c.values) + c.offsets[i],
                                   c.offsets[i + 1] - c.offsets[i]);
          if (c.plain) {
            p = std::copy_n(s.data(), s.size(), p);
          } else {
            Out quoted;
            append_string(quoted, s, delimiter);
            p = std::copy_n(quoted.data(), quoted.size(), p);
          }
          break;
        }
        case ColumnType::i32: p = put_number(p, reinterpret_cast<const std::int32_t*>(c.values)[i]); break;
        case ColumnType::i64: p = put_number(p, reinterpret_cast<const std::int64_t*>(c.values)[i]); break;
        case ColumnType::u32: p = put_number(p, reinterpret_cast<const std::uint32_t*>(c.values)[i]); break;
        case ColumnType::u64: p = put_number(p, reinterpret_cast<const std::uint64_t*>(c.values)[i]); break;
        case ColumnType::f32: p = put_number(p, reinterpret_cast<const float*>(c.values)[i]); break;
        case ColumnType::f64: p = put_number(p, reinterpret_cast<const double*>(c.values)[i]); break;
      }
    }
    *p++ = '\n';
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
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
