// One chunk of a CSV body (whole records) parsed into the columns a query needs; the other
// columns' fields are stepped over (found, not converted or copied). The fast path walks the
// structural bitmasks 64 bytes at a time; anything unusual in the chunk (a literal quote inside
// an unquoted field, a malformed or ragged row, a value that is not of its column's type) sends
// the whole chunk to the scalar path, which reads the same dialect field by field and names the
// error exactly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scan/structural.hpp"
#include "tandem/table.hpp"

namespace tandem::scan {

// A column the query needs: its place in the file and how its values are read. An inferred
// column (fixed false) starts as its sampled type and widens i64 -> f64 -> str when a value does
// not fit; a fixed one (a schema's type) makes such a value an error.
struct ColumnPlan {
  std::size_t index{0};
  std::string name;
  ColumnType type{ColumnType::i64};
  bool fixed{false};
};

struct ChunkInput {
  const char* begin{nullptr};
  const char* end{nullptr};  // 64 readable bytes must follow (padding)
  char delimiter{','};
  std::size_t columns{0};  // fields per record (the header's)
  const std::vector<ColumnPlan>* plans{nullptr};
  const std::vector<int>* slot{nullptr};  // per file column: its plan index, or -1 (skipped)
  SimdLevel simd{SimdLevel::scalar};
  bool records{false};  // also say where each record's text lies (ChunkResult::record_starts/ends)
};

enum class ChunkStatus : std::uint8_t { ok, widened, error };

struct ChunkResult {
  ChunkStatus status{ChunkStatus::ok};
  std::vector<ColumnType> types;  // per plan: the types the chunk was read with (widened ones too)
  Table table;                    // the plans' columns (ok and widened)
  std::size_t rows{0};
  std::size_t newlines{0};  // line feeds in the chunk (quoted ones too): line numbers for errors
  bool used_fast_path{true};
  // With ChunkInput::records: each record's bytes [start, end) from begin, its line end included
  // (a last record without one ends at the chunk's end); blank lines belong to no record.
  std::vector<std::uint32_t> record_starts, record_ends;
  // error: where (bytes from begin, line feeds before it in the chunk), which column (1-based,
  // 0 for none) and what.
  std::size_t error_offset{0}, error_newlines{0}, error_column{0};
  std::string error_what;
};

ChunkResult parse_chunk(const ChunkInput& in);

// The same with the scalar path only (the reference the tests hold the fast path to).
ChunkResult parse_chunk_scalar(const ChunkInput& in);

// "an i64", "a u32", …: for messages.
std::string with_article(ColumnType t);

}  // namespace tandem::scan
