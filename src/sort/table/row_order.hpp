// Row orders from normalised keys (key_layout.hpp): a full stable sort and a selection of the
// first k rows. Internal to src/sort/table.
//
// The full sort radix-sorts the first key word with the row indices (cpu_radix_sort, stable),
// then each run of rows whose words so far are equal by the next word (MSD, runs of at most 64
// rows by a comparison sort), up to the word holding the last byte that decides; runs still tied
// there are ordered by the whole strings of the tie-break column on (compare_rows_from). Every
// step is stable, so rows with equal keys keep their input order.
//
// The selection keeps, per thread, the rows that may still be among the first k: a row whose
// first word is above the k-th best first word seen so far cannot be, so most rows cost one
// compare; the survivors are cut back to k (nth_element) whenever their buffer fills, and the
// threads' k each are sorted at the end with the row index as the last key (stable).
#pragma once
#include <cstddef>
#include <vector>

#include "key_layout.hpp"

namespace tandem::detail {

std::vector<std::size_t> sorted_row_order(const Table& table, const KeyLayout& layout, const KeyWords& keys,
                                          int threads);

// The first min(k, rows) rows of sorted_row_order, without sorting the rest.
std::vector<std::size_t> first_rows(const Table& table, const KeyLayout& layout, const KeyWords& keys, std::size_t k,
                                    int threads);

// Every column's rows at the given indices, in that order, on `threads` threads.
Table gather_rows(const Table& table, std::span<const std::size_t> rows, int threads);

}  // namespace tandem::detail
