// Tables in and out of the Arrow C Data and C Stream interfaces
// (https://arrow.apache.org/docs/format/CDataInterface.html, .../CStreamInterface.html), so that
// pyarrow, Polars, DuckDB, pandas and any other Arrow producer or consumer exchange tables with
// tandem without copying numbers.
//
// In: a record batch (struct array, format "+s") or a plain array (one column), or a stream of
// either. Read in place (the column borrows Arrow's buffer; the array's release callback runs once,
// when the last column that borrows from it is gone): int32, int64, uint32, uint64, float32,
// float64, date32/date64/timestamp/duration/time (as their integer counts), validity bitmaps whose
// slice offset is a multiple of 8, large_utf8 / large_binary without a slice offset. Converted (a
// copy): int8, int16, uint8, uint16 and bool to int32; float16 to float32; utf8 / binary offsets to
// 64 bits; string_view / binary_view to offsets + bytes; dictionary arrays decoded to their values
// (or their codes, ArrowImportOptions::dictionaries); validity bitmaps at other offsets. Refused with
// a UsageError naming the column: nested types (lists, structs, maps, unions), decimals,
// fixed-size binary, intervals, null columns.
//
// Out: a struct array of the table's columns (numbers as their own type, strings as large_utf8),
// every buffer lent: the release callbacks keep the table's buffers alive.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tandem/table.hpp"

// The ABI structs, as the specification gives them (to be copied into each project).
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

extern "C" {
struct ArrowSchema {
  // Array type description
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;

  // Release callback
  void (*release)(struct ArrowSchema*);
  // Opaque producer-specific data
  void* private_data;
};

struct ArrowArray {
  // Array data description
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;

  // Release callback
  void (*release)(struct ArrowArray*);
  // Opaque producer-specific data
  void* private_data;
};
}  // extern "C"

#endif  // ARROW_C_DATA_INTERFACE

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

extern "C" {
struct ArrowArrayStream {
  // Callbacks providing stream functionality
  int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
  int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
  const char* (*get_last_error)(struct ArrowArrayStream*);

  // Release callback
  void (*release)(struct ArrowArrayStream*);

  // Opaque producer-specific data
  void* private_data;
};
}  // extern "C"

#endif  // ARROW_C_STREAM_INTERFACE

namespace tandem {

struct ArrowImportOptions {
  // Dictionary-encoded columns: decoded to their values (a copy), or their codes as an integer
  // column (int32 or int64, as the index type widens; a missing row stays missing).
  enum class Dictionaries { decode, codes } dictionaries{Dictionaries::decode};
  // The columns to import (by name, in the table's order); empty: all. A name the data lacks is a
  // UsageError listing the columns there are.
  std::vector<std::string> columns;
  // Name of the column when the data is a plain array rather than a record batch; empty: the
  // schema's name (or "column" where that is empty too).
  std::string column_name;
};

// A table from one array (moved from: `array->release` is null afterwards, the table owns it) and
// its schema (only read; the caller releases it). UsageError naming the column for a type tandem
// does not take; InputError for buffers that contradict the schema.
Table table_from_arrow(ArrowArray* array, const ArrowSchema& schema, const ArrowImportOptions& options = {});

// Every batch of a stream, one table each, in order (f may keep the tables). Releases the stream.
// InputError with the producer's message when the stream reports an error.
void for_each_arrow_batch(ArrowArrayStream* stream, const std::function<void(Table)>& f,
                          const ArrowImportOptions& options = {});

// A whole stream as one table: one batch is read in place; several batches are concatenated
// (copied once). An empty stream gives a table of the schema's columns with no rows. Releases the
// stream.
Table table_from_arrow_stream(ArrowArrayStream* stream, const ArrowImportOptions& options = {});

// The columns of several tables of the same columns (names and types) one after another, copied
// on every core; UsageError naming the column where the parts differ.
Table concatenate(const std::vector<Table>& parts);

// The schema of a table as a struct ("+s") of its columns. `out` must not hold a live schema.
void export_arrow_schema(const Table& table, ArrowSchema* out);
// A table as a struct array and its schema; both lend the table's buffers and keep them alive
// until released. Either may be null when the caller does not want it.
void export_arrow(const Table& table, ArrowArray* out_array, ArrowSchema* out_schema);
// A stream over the given batches (all of the first one's columns), which it keeps alive.
void export_arrow_stream(std::vector<Table> batches, ArrowArrayStream* out);
// The Arrow format string of a column type ("i", "l", "I", "L", "f", "g", "U").
std::string_view arrow_format(ColumnType type);

}  // namespace tandem
