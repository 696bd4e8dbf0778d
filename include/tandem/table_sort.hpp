// Sorting tables by several key columns, as SQL's ORDER BY and pandas' sort_values do.
//
//   tandem::SortSpec spec{.by = {{"id3"}, {"v3", tandem::descending}}, .nulls = tandem::NullOrder::last};
//   auto r = tandem::sort(table, spec);          // r.table: every column, rows in key order
//   auto o = tandem::argsort(table, spec);       // o.rows: the row order only
//   spec.limit = 100;                            // only the first 100 rows, without sorting the rest
//
// Keys compare as SQL does: numbers by value (signed and unsigned integers, floats), strings by
// their bytes (unsigned, as UTF-8 orders code points), -0.0 equal to +0.0, every NaN equal to
// every other and after every number (so first when descending), missing values last unless
// nulls = first (in either direction). The sort is stable: rows with equal keys keep their input
// order. Every column type may be a key.
#pragma once
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"
#include "tandem/table.hpp"
#include "tandem/table/csv.hpp"

namespace tandem {

enum class SortOrder : std::uint8_t { ascending, descending };
inline constexpr SortOrder ascending = SortOrder::ascending;
inline constexpr SortOrder descending = SortOrder::descending;

// Where missing values go, in ascending and descending keys alike.
enum class NullOrder : std::uint8_t { last, first };

struct SortKey {
  std::string column;
  SortOrder order{SortOrder::ascending};
};

struct SortSpec {
  std::vector<SortKey> by;
  NullOrder nulls{NullOrder::last};
  std::optional<std::size_t> limit{};  // only the first `limit` rows of the order
};

struct TableSortOptions {
  int threads{0};  // CPU threads (0: every core the process may use)
  // Where the row order is found. gpu: the key columns are uploaded (strings ranked there), the
  // order is found by radix passes on the GPU and the host gathers the columns; NoDeviceError
  // without a GPU. auto: the GPU for tables of 2^22 rows or more where one is present, else the
  // CPU. A GPU that runs out of memory falls back to the CPU with a note in the report.
  Device device{Device::cpu};
  // Floats: NaN sorts as a missing value (pandas' na_position) instead of after every number.
  bool nan_is_missing{false};
  // Strings are keyed by at most this many leading bytes; rows whose prefixes tie are ordered by
  // their whole strings afterwards. Columns whose strings all fit need no second look.
  std::size_t string_prefix{16};
};

// "id3,v3:desc" (each key optionally ":asc" or ":desc"); UsageError naming the part that does
// not parse. The columns are checked when the table is sorted.
std::vector<SortKey> parse_sort_keys(std::string_view text);

struct TableSortResult {
  Table table;
  Report report;
};

struct ArgsortResult {
  std::vector<std::size_t> rows;  // input row indices in sorted order
  Report report;
};

// UsageError naming the key when a column is absent or named twice, or when there is no key.
TableSortResult sort(const Table& table, const SortSpec& spec, const TableSortOptions& options = {});
ArgsortResult argsort(const Table& table, const SortSpec& spec, const TableSortOptions& options = {});

// A CSV file sorted into CSV, file to file, within a memory limit:
//   tandem::sort_csv("g.csv", spec, out, {.memory_limit = 200 << 20});
// The output is the header and the input's records in key order, each record's bytes as they
// were read (quoting, number spellings and line ends kept; blank lines dropped; a last record
// without a line end gets the header's). Only the key columns, and the columns the schema names
// (whose values are checked), are parsed. A file that fits (its size at most a fifth of the
// limit) is read whole by the streaming scan, its records kept where they were read, the row
// order found as tandem::argsort finds it and the records copied out in that order. A larger one
// is sorted by runs: it is read in pieces of an eighth of the limit, each piece's row order found
// the same way and its key columns and records written in that order as a run to a temporary
// file, and the runs are merged (a tournament tree of the runs' current rows compared by their
// normalised keys, each run read back a block at a time, ties to the earlier run: stable), the
// records written out in batches. Both give the same bytes; with `limit`, each run keeps its
// first k rows and the merge stops after k. The temporary folder is removed on every path,
// errors included.
struct CsvSortOptions {
  CsvOptions csv{};             // delimiter, schema, threads of the reader
  TableSortOptions sort{};      // threads of the sort, NaN handling, string prefix
  std::size_t memory_limit{0};  // bytes; 0: half of the memory available when the sort starts
  std::string temp_dir{};       // for the runs; empty: $TMPDIR, else /tmp
};

struct CsvSortResult {
  std::size_t rows_read{0};
  std::size_t rows_written{0};
  std::size_t runs{0};  // 0: sorted in memory
  Report report;
};

// Writes the header and the sorted records to `out`. InputError naming the file (and line) for a
// missing or malformed file, UsageError naming a key the header lacks; standard input ("-") is
// read whole and sorted in memory.
CsvSortResult sort_csv(const std::string& in_path, const SortSpec& spec, std::ostream& out,
                       const CsvSortOptions& options = {});

}  // namespace tandem
