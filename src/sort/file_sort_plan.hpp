// How an array file is sorted within a memory limit (pure sizing, no I/O): in one piece when the
// piece and its sort's scratch fit, else in pieces (each sorted in memory and written as a run to
// a scratch file) merged in one pass, each run read through a window of memory.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tandem::detail {

struct FileSortPlan {
  std::uint64_t elements{0};
  std::size_t runs{1};             // pieces sorted in memory; 1: sorted whole, no scratch file
  std::size_t piece_elements{0};   // the largest piece
  std::size_t window_elements{0};  // each run's window in the merge (runs > 1)
};

// A run's window holds at least this many elements: fewer would make the merge's reads small and
// its rounds many.
inline constexpr std::size_t kMinRunWindow = 4096;

// element_bytes: one key and its value. A piece and its sort's scratch take the whole limit; in
// the merge, the runs' windows take half and the merged block the other half. UsageError when
// the limit leaves a run's window fewer than kMinRunWindow elements, naming the least limit that
// would do.
FileSortPlan plan_file_sort(std::uint64_t elements, std::size_t element_bytes, std::size_t memory_limit);

}  // namespace tandem::detail
