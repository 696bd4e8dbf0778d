// The hybrid CPU+GPU bitonic merge sort of seed 000 (patent CN103514042).
// tandem::sort routes algorithm = bitonic (and device = hybrid) here.
#pragma once
#include <span>

#include "tandem/report.hpp"
#include "tandem/sort.hpp"

namespace tandem::bitonic {

template <class K>
Report sort(std::span<K> keys, const SortOptions& opts);

// Bitonic networks are not stable: equal keys are ordered by their original index to keep the
// stability tandem::sort_pairs promises.
template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts);

}  // namespace tandem::bitonic
