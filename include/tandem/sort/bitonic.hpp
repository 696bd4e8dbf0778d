// The hybrid CPU+GPU bitonic merge sort: a bitonic network split between the CPU and GPUs by
// their measured capability, both sorting at once where the network allows.
// tandem::sort routes algorithm = bitonic (and device = hybrid) here.
#pragma once
#include <span>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/sort.hpp"

namespace tandem::bitonic {

template <class K>
Report sort(std::span<K> keys, const SortOptions& opts);

// Bitonic networks are not stable: equal keys are ordered by their original index to keep the
// stability tandem::sort_pairs promises.
template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts);

// The same on an explicit list of GPUs instead of opts.bitonic.gpus (CUDA device indices beside
// the CPU). Several entries: every one gets a share of the plan and sorts it concurrently with the
// others; repeats are allowed ({0, 0}: two shares on GPU 0, each with its own streams and buffer).
// One entry: the CPU+GPU plan on that GPU. Empty: GPU 0. An index that is not a usable GPU is a
// UsageError.
template <class K>
Report sort(std::span<K> keys, const SortOptions& opts, const std::vector<int>& gpus);
template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts, const std::vector<int>& gpus);

}  // namespace tandem::bitonic
