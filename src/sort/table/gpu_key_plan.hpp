// How the GPU orders a table's rows by its key columns: one stable radix sort of the row indices
// per key column, the last key first, so that each earlier key decides among rows the later ones
// left tied (least significant digit first, a whole column being one digit). Each pass sorts by
// as few bits as the column's values need: the value minus the smallest present value (the
// largest minus the value when descending), with one bit above it for missing values. A 64-bit
// column that also has missing values takes two passes (the values, then the missing bit). The
// plan and the per-row key are pure so that the CPU tests check them; gpu_row_order.cu runs them.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "tandem/core/key_order.hpp"
#include "tandem/cuda/hd.hpp"

namespace tandem::detail {

// What a first look at one key column found, over its present rows (a NaN counts as missing
// where NaN is treated as missing).
struct GpuKeyFacts {
  bool descending{false};
  std::size_t present{0};
  std::size_t missing{0};
  std::uint64_t min{0}, max{0};  // of the ordered value bits (key_order.hpp) of present rows
};

struct GpuKeyPass {
  std::size_t key{0};      // index into the facts
  int value_bits{0};       // bits of the value part (bit_width of max - min)
  bool null_bit{false};    // a bit above the value part orders the missing rows
  bool nulls_only{false};  // the pass sorts by the missing bit alone (after a 64-bit value pass)
  int end_bit() const { return nulls_only ? 1 : value_bits + (null_bit ? 1 : 0); }
  bool wide() const { return end_bit() > 32; }  // sorted as 64-bit keys
};

// The passes in the order they run (the last key's first). A key whose rows are all equal (one
// distinct present value and nothing missing, or nothing present) needs none.
std::vector<GpuKeyPass> plan_gpu_key_passes(std::span<const GpuKeyFacts> keys);

// A present value's ordered bits (key_order.hpp), widened to 64: -0.0 as +0.0 and every NaN as one
// NaN (after +inf). False for a NaN when NaN counts as missing.
template <class T>
TANDEM_HD bool ordered_key_value(T x, bool nan_missing, std::uint64_t& ordered) {
  if constexpr (std::is_floating_point_v<T>) {
    if (x != x) {
      if (nan_missing) return false;
      using U = ordered_bits_t<T>;
      constexpr U quiet = sizeof(T) == 8 ? U(0x7ff8000000000000ull) : U(0x7fc00000u);
      x = __builtin_bit_cast(T, quiet);
    } else if (x == T(0)) {
      x = T(0);
    }
  }
  ordered = to_ordered(x);
  return true;
}

// The radix key of one row in a pass: `ordered` is the row's ordered value bits (ignored when
// missing). Missing rows sort after present ones unless nulls_first, in either direction.
TANDEM_HD std::uint64_t gpu_pass_key(bool nulls_only, int value_bits, bool null_bit, bool descending, std::uint64_t min,
                                     std::uint64_t max, bool nulls_first, bool missing, std::uint64_t ordered) {
  const std::uint64_t flag = missing != nulls_first ? 1u : 0u;  // 1: after the others
  if (nulls_only) return flag;
  const std::uint64_t value = missing ? 0 : (descending ? max - ordered : ordered - min);
  return null_bit ? (flag << value_bits) | value : value;
}

}  // namespace tandem::detail
