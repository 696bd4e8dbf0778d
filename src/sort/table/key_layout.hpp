// Normalised sort keys of a table: the key columns encoded into one fixed-width byte string per
// row whose byte order (memcmp) is the order of the key tuple, stored as big-endian u64 words so
// that the existing u64 radix sort orders them a word at a time. Internal to src/sort/table.
//
// Per key column, in the order of the keys:
//   [null byte]  only when the column has missing values (or NaN counts as missing): 0 for
//                present and 1 for missing when nulls come last, the other way round when first
//   value bytes  missing rows: all zero; otherwise, big-endian,
//                  integers   the sign bit flipped (to_ordered), 4 or 8 bytes
//                  floats     -0.0 made +0.0 and every NaN one positive NaN, then to_ordered:
//                             negative < -0 = +0 < positive < +inf < NaN; 4 or 8 bytes
//                  strings    the first `prefix` bytes, zero-padded; prefix = the longest
//                             string's length, at most TableSortOptions::string_prefix
//                descending keys have their value bytes inverted (not the null byte).
// Rows are padded with zero bytes to whole words.
//
// A string column whose prefix may not decide (a string longer than the prefix, or one holding a
// zero byte, where "a" and "a\0" encode alike) needs a tie-break: rows equal on every byte up to
// the end of the first such column's prefix (`exact_bytes`) are ordered by comparing the actual
// values from that column on (compare_rows_from).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tandem/core/uninit_allocator.hpp"
#include "tandem/table.hpp"
#include "tandem/table_sort.hpp"

namespace tandem::detail {

struct KeyField {
  std::size_t column{0};  // index in the table
  ColumnType type{ColumnType::i64};
  bool descending{false};
  bool null_byte{false};  // a leading byte orders missing values
  bool nan_missing{false};
  std::size_t offset{0};  // of the field's first byte (the null byte when present)
  std::size_t width{0};   // value bytes (strings: the prefix)
  bool tie_break{false};  // strings whose prefixes may tie although the strings differ
};

struct KeyLayout {
  std::vector<KeyField> fields;
  NullOrder nulls{NullOrder::last};
  std::size_t bytes{0};        // encoded bytes per row, before padding
  std::size_t words{0};        // u64 words per row (at least 1)
  int first_tie_break{-1};     // index into fields; -1: the bytes decide the order
  std::size_t exact_bytes{0};  // bytes that decide before the tie-break (== bytes without one)
};

// UsageError naming the key when a column is absent or named twice, or there is no key.
KeyLayout plan_key_layout(const Table& table, const SortSpec& spec, const TableSortOptions& options);

// Sets the fields' offsets and the layout's bytes, words, first_tie_break and exact_bytes from
// the fields' null bytes, widths and tie-breaks.
void place_fields(KeyLayout& layout);

// Widens `into` to encode the keys of other's table too (the same spec on a table with the same
// columns: a piece of one file): per field the wider prefix, a null byte and a tie-break where
// either needs one. Keys encoded with the joined layout compare across the tables by their bytes.
void join_layout(KeyLayout& into, const KeyLayout& other);

// One line per field: "id3 str prefix 12, tie-break", for the Report.
std::string describe(const KeyLayout& layout, const Table& table);

// Normalised keys, word-major: word w of row r is data[w * rows + r].
struct KeyWords {
  std::size_t rows{0};
  std::size_t words{0};
  std::vector<std::uint64_t, UninitAllocator<std::uint64_t>> data;  // filled in parallel by encode_keys
  std::uint64_t at(std::size_t w, std::size_t r) const { return data[w * rows + r]; }
  std::uint64_t* word(std::size_t w) { return data.data() + w * rows; }
  const std::uint64_t* word(std::size_t w) const { return data.data() + w * rows; }
};

// Encodes rows [begin, end) into out (word-major as KeyWords, out.rows == table rows).
void encode_keys(const Table& table, const KeyLayout& layout, std::size_t begin, std::size_t end, KeyWords& out);
// Every row, on `threads` threads (<= 0: default).
KeyWords encode_keys(const Table& table, const KeyLayout& layout, int threads);

// Drops the key bytes that are equal in every row (the db-benchmark's id3 = 'id%010d' of 1..10^5
// shares its first 6 bytes), packing the rest into fewer words when that saves one: fewer words
// to sort, and a run of equal first words no longer spans the whole table. layout.words and
// exact_bytes then count the kept bytes; the fields keep describing the full encoding. Returns
// the bytes dropped.
std::size_t drop_constant_bytes(KeyLayout& layout, KeyWords& keys, int threads);

// Compares row a of ta with row b of tb on one key field by their values (two tables with the
// layout's columns: the runs of a sort too large for memory), as the layout orders them.
int compare_field(const Table& ta, std::size_t a, const Table& tb, std::size_t b, const KeyField& f, NullOrder nulls);

// Compares rows a and b on the key fields from `from` on by their values (negative, 0, positive
// as a sorts before, with, after b), in the layout's order and directions.
int compare_rows_from(const Table& table, const KeyLayout& layout, std::size_t from, std::size_t a, std::size_t b);

// Compares the encoded keys of rows a and b over their first `bytes` bytes.
int compare_key_bytes(const KeyWords& keys, std::size_t bytes, std::size_t a, std::size_t b);
// The same for row a of ka and row b of kb (keys of two tables encoded with one layout).
inline int compare_key_bytes(const KeyWords& ka, std::size_t a, const KeyWords& kb, std::size_t b, std::size_t bytes) {
  const std::size_t full = bytes / 8, rest = bytes % 8;
  for (std::size_t w = 0; w < full; ++w) {
    const std::uint64_t x = ka.at(w, a), y = kb.at(w, b);
    if (x != y) return x < y ? -1 : 1;
  }
  if (rest == 0) return 0;
  const std::uint64_t mask = ~std::uint64_t{0} << (8 * (8 - rest));  // the word's first `rest` bytes
  const std::uint64_t x = ka.at(full, a) & mask, y = kb.at(full, b) & mask;
  return x < y ? -1 : x > y ? 1 : 0;
}

// The full key order of rows a and b: the encoded bytes, then the tie-break (0 when equal).
inline int compare_keys(const Table& table, const KeyLayout& layout, const KeyWords& keys, std::size_t a,
                        std::size_t b) {
  const int c = compare_key_bytes(keys, layout.exact_bytes, a, b);
  if (c != 0 || layout.first_tie_break < 0) return c;
  return compare_rows_from(table, layout, static_cast<std::size_t>(layout.first_tie_break), a, b);
}

}  // namespace tandem::detail
