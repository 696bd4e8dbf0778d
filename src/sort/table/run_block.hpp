// The blocks of a sorted run as bytes: a table's rows in a given order, each column stored narrow
// so that the runs cost about the CSV text's size on disk instead of twice it:
//   integers   their difference from the piece column's smallest value, in the fewest bytes
//              (1, 2, 4 or 8) that hold the piece's range (db-benchmark's id4, v1: one byte)
//   floats     as they are
//   strings    4-byte offsets from the block's first string (blocks are far below 4 GiB), bytes
//   validity   the block's bits, for a column with missing values
// A block reads back as a Table: floats, string bytes and validity lent in place from the
// block's buffer, integers and offsets widened. Internal to src/sort/table.
//
// Image: [u64 rows] then per column [u64 base][u8 width][u8 validity][6 zero bytes], the
// validity bits, then the values (strings: rows + 1 offsets, then the bytes), each part padded
// to 8 bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tandem/table.hpp"

namespace tandem::detail {

// How one column of a piece is stored (numbers only; strings and floats ignore it).
struct ColumnCoding {
  std::uint64_t base{0};  // integers: the smallest value's bits
  std::uint8_t width{8};  // bytes per value
};

// The codings of every column of t (one pass over each integer column, on `threads` threads).
std::vector<ColumnCoding> plan_codings(const Table& t, int threads);

// The images of t's rows for each list d of `rows` (rows[starts[d] .. starts[d+1]), non-empty),
// back to back, and each image's bytes; blocks on `threads` threads.
struct BlockImages {
  std::vector<std::byte> bytes;
  std::vector<std::uint64_t> sizes;
};
BlockImages encode_blocks(const Table& t, std::span<const ColumnCoding> codings, std::span<const std::size_t> rows,
                          std::span<const std::size_t> starts, int threads);

// A block read back; `like` names the columns and types. Error when the image does not fit them.
Table decode_block(std::shared_ptr<const std::byte> bytes, std::size_t size, const Table& like);

}  // namespace tandem::detail
