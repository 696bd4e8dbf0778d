// The GPU table group-by's choices, kept apart from its kernels so they are tested on the CPU:
// how each key column becomes codes, when codes of several columns combine into one number and
// when that number is ranked, and when a 64-bit integer sum may have wrapped.
//
// Codes sort as their keys do, so group ids (a mixed-radix number of the codes, or its rank
// among the distinct ones) sort as the key tuples do: ascending ids are the result's order, and
// no group depends on a hash collision.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tandem/table.hpp"

namespace tandem::gpu_groupby {

enum class KeyCoding : std::uint8_t {
  range,       // integers: the value's offset from the column's minimum
  ranked,      // the value's rank among the column's distinct values (sorted on the device)
  dictionary,  // strings: codes of a dictionary built when the table was uploaded
};

// How a key column of `type` becomes codes: its ordered minimum and maximum bits (to_ordered of
// the present values; unused for floats and strings) decide between an offset and a rank.
KeyCoding choose_coding(ColumnType type, std::uint64_t lo, std::uint64_t hi, std::size_t rows);

// Whether codes of `card` values can be appended to a mixed-radix number of `acc_card` values
// without the product passing 2^64.
bool fits_mixed(std::uint64_t acc_card, std::uint64_t card);

// Up to this many group ids the mixed-radix number is the group id itself (one array slot per
// possible key tuple, most of them perhaps empty); beyond it the numbers are ranked.
std::uint64_t direct_limit(std::size_t rows);

// Bits a radix sort must look at for values below `card`.
int bits_for(std::uint64_t card);

// Whether a group of `count` 64-bit integers between `lo` and `hi` may sum past the range of
// int64 (signed) or uint64 (unsigned); the GPU's atomics wrap, the CPU engine checks exactly.
bool sum_may_wrap(bool is_signed, std::int64_t lo, std::int64_t hi, std::uint64_t count);
bool sum_may_wrap_unsigned(std::uint64_t hi, std::uint64_t count);

// top(col, n) up to this n reads levels by atomics (2n passes over the column) instead of sorting
// the column by (group, value).
inline constexpr std::size_t kTopByLevels = 4;

// Group counts up to this many take per-block tables in shared memory before global atomics.
inline constexpr std::uint64_t kSharedGroups = 4096;

}  // namespace tandem::gpu_groupby
