// Tables as bytes: a table is written as its columns' buffers back to back, and tables read back
// are joined into one, rows in order. The distributed layer sends them between ranks; the
// group-by sink spills partial groups to files with them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/scratch.hpp"
#include "tandem/table.hpp"

namespace tandem {

// A table on the wire: its column count, then each column's name, type, length and buffers
// (values, string offsets, validity), every field padded to a multiple of 8 bytes so that the
// reader can lend the numbers in place, aligned.
//
// The images of t's rows for each list d of `rows` (list d: rows[starts[d] .. starts[d+1])), back
// to back in one buffer, and each image's bytes (0 for an empty list: no table), written straight
// from t's columns (no gathered tables), the columns on `threads` threads.
struct TableImages {
  // Not zeroed first (every byte is written), from 2 MiB up on the scratch pool's huge pages:
  // a fresh buffer's page faults cost a shuffle more than writing it.
  Scratch<std::byte> bytes;
  std::vector<std::uint64_t> sizes;
};
TableImages write_table_images(const Table& t, std::span<const std::size_t> rows, std::span<const std::size_t> starts,
                               int threads);

// Appends the image of all of t's rows to `out` (nothing for a table without rows).
void write_table(const Table& t, std::vector<std::byte>& out);

// Reads the tables written back to back into `bytes` (counts[r] bytes from rank r, each a whole
// number of tables, possibly none) and joins their rows in order. An empty block gives no rows.
// `like`: the columns' names and types when no rank sent a table.
Table read_tables(std::shared_ptr<const std::vector<std::byte>> bytes, const Table& like, int threads = 1);
// The same for `size` bytes at `bytes` (a buffer the exchange wrote without zeroing it first).
Table read_tables(std::shared_ptr<const std::byte> bytes, std::size_t size, const Table& like, int threads = 1);

// The tables' rows one after another (columns matched by position; names and types must agree,
// else UsageError), each (column, part) pair copied on one of `threads` threads.
Table concat_tables(const std::vector<Table>& parts, const Table& like, int threads = 1);

// A table with the columns of `t` and no rows.
Table empty_like(const Table& t);

// 64-bit hash of row i's values in the key columns, equal for rows that group-by puts in one
// group: -0.0 and +0.0 hash alike, every NaN alike, and a missing value alike.
void hash_rows(const Table& t, std::span<const std::size_t> key_columns, std::span<std::uint64_t> out, int threads = 1);
// The same for rows first .. first + out.size() - 1: out[j] is row first + j's hash.
void hash_rows_from(const Table& t, std::span<const std::size_t> key_columns, std::size_t first,
                    std::span<std::uint64_t> out, int threads = 1);
// The same for the rows rows[j] only: out[j] is row rows[j]'s hash.
void hash_some_rows(const Table& t, std::span<const std::size_t> key_columns, std::span<const std::size_t> rows,
                    std::span<std::uint64_t> out, int threads = 1);

}  // namespace tandem
