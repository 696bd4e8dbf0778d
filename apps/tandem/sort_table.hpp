// tandem sort's table form: a CSV file sorted by key columns (cmd_sort_table.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace tandem::cli {

struct TableSortArgs {
  std::string input;  // CSV file ('-': standard input)
  std::string by;     // "id3,v3:desc"
  std::string nulls{"last"};
  std::optional<std::uint64_t> limit;
  std::string schema;  // CSV column types, as groupby's --schema
  std::string out;     // CSV ('-': standard output)
  int threads{0};
  bool explain{false};
  std::uint64_t memory_limit{0};  // bytes (0: half of the available memory)
  std::string temp_dir;           // for sorted runs (empty: $TMPDIR)
  std::string device{"auto"};     // auto, cpu or gpu: where the row order is found
};

int run_table_sort(const TableSortArgs& a);

}  // namespace tandem::cli
