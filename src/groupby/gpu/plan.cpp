#include "groupby/gpu/plan.hpp"

#include <algorithm>
#include <bit>
#include <limits>

namespace tandem::gpu_groupby {

KeyCoding choose_coding(ColumnType type, std::uint64_t lo, std::uint64_t hi, std::size_t rows) {
  if (type == ColumnType::str) return KeyCoding::dictionary;
  if (!is_integer(type) || hi < lo) return KeyCoding::ranked;
  // An offset costs nothing to compute, but a sparse range wastes group-id space that the ranked
  // coding would not: offsets only while the range is within a few times the rows.
  const std::uint64_t limit = std::min<std::uint64_t>(std::max<std::uint64_t>(4 * std::uint64_t(rows), 1u << 20),
                                                      std::numeric_limits<std::uint32_t>::max() - 1);
  return hi - lo < limit ? KeyCoding::range : KeyCoding::ranked;
}

bool fits_mixed(std::uint64_t acc_card, std::uint64_t card) {
  return acc_card == 0 || card <= std::numeric_limits<std::uint64_t>::max() / acc_card;
}

std::uint64_t direct_limit(std::size_t rows) {
  // Per-group arrays are touched at random by the atomics; past ~2^26 slots (or a few per row)
  // ranking the tuples is cheaper than sweeping mostly empty slots.
  return std::min<std::uint64_t>(std::max<std::uint64_t>(4 * std::uint64_t(rows), 1u << 16), std::uint64_t{1} << 26);
}

int bits_for(std::uint64_t card) { return card <= 1 ? 1 : std::bit_width(card - 1); }

bool sum_may_wrap(bool is_signed, std::int64_t lo, std::int64_t hi, std::uint64_t count) {
  if (!is_signed) return sum_may_wrap_unsigned(static_cast<std::uint64_t>(hi), count);
  const auto magnitude = [](std::int64_t v) {
    return v < 0 ? static_cast<unsigned __int128>(-static_cast<__int128>(v)) : static_cast<unsigned __int128>(v);
  };
  const unsigned __int128 big = std::max(magnitude(lo), magnitude(hi));
  return big * count >= (static_cast<unsigned __int128>(1) << 63);
}

bool sum_may_wrap_unsigned(std::uint64_t hi, std::uint64_t count) {
  return static_cast<unsigned __int128>(hi) * count > std::numeric_limits<std::uint64_t>::max();
}

}  // namespace tandem::gpu_groupby
