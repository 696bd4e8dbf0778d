// Columns from raw or .npy arrays, and tables as folders of .npy files that numpy opens directly:
//
//   DIR/table.json        {"rows": N, "columns": [{"name": "id1", "type": "str"}, ...]} (column order)
//   DIR/NAME.npy          a number column: a 1-D array of its type (i32 <i4, i64 <i8, u32 <u4,
//                         u64 <u8, f32 <f4, f64 <f8); a missing row holds an unspecified value
//   DIR/NAME.offsets.npy  a string column: N + 1 u64 offsets into NAME.bytes (the first is 0)
//   DIR/NAME.bytes        a string column: the values' bytes back to back (raw, no header)
//   DIR/NAME.valid.npy    only when some rows are missing: (N + 7) / 8 u8, bit i % 8 of byte
//                         i / 8 set when row i is present (least significant bit first, as Arrow)
//
// In numpy: s = np.load("DIR/id1.offsets.npy"); b = open("DIR/id1.bytes", "rb").read();
// row i is b[s[i]:s[i+1]]; present = np.unpackbits(np.load("DIR/v1.valid.npy"), bitorder="little")[:N].
#pragma once
#include <string>

#include "tandem/core/types.hpp"
#include "tandem/table.hpp"

namespace tandem {

// A column named `name` from a raw or .npy file of `dtype` elements (tandem::io::read_array's
// rules). UsageError for a dtype that is no column type (u8, u16, i8, i16); InputError for the file.
Column read_column(const std::string& name, const std::string& path, DType dtype);

// Writes the table as the folder above. The folder appears complete or not at all: it is written
// beside `dir` and renamed into place. An existing table folder (one holding table.json) or an
// empty folder is replaced; anything else at `dir` is an InputError. UsageError when a column's
// name cannot name a file (empty, ".", "..", holding '/' or NUL) or two columns' files collide.
void write_table_folder(const std::string& dir, const Table& table);

// Reads a folder written by write_table_folder. InputError naming the file that is missing or
// does not match table.json.
Table read_table_folder(const std::string& dir);

}  // namespace tandem
