// A large table handed to a GroupBySink as several chunks on several threads: consume() folds its
// chunk on the calling thread, so one call over 10^7 partial groups keeps one core busy while the
// others wait (the GPU's pieces of a CSV file hand over that many for 10^7 keys).
#pragma once
#include <cstddef>

#include "tandem/groupby_sink.hpp"
#include "tandem/table.hpp"

namespace tandem::sink {

// Rows a slice holds at least: a smaller table goes whole.
inline constexpr std::size_t kSliceRows = std::size_t{1} << 20;

// Consumes `table` as chunks next_index, next_index + 1, … (its rows in order, up to `threads`
// slices of at least kSliceRows rows each), and moves next_index past them.
void consume_in_slices(GroupBySink& sink, std::size_t& next_index, const Table& table, int threads);

}  // namespace tandem::sink
