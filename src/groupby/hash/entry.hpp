// The hash group-by on the library's context (context.hpp): each call borrows a workspace of the
// calling thread's device, so concurrent callers never share one. K is u32 or u64 (signed keys
// travel as their bit patterns); V is void (counts), double or int64. Fewer than 2^32 rows.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "groupby/hash/types.hpp"
#include "tandem/core/report.hpp"

namespace tandem::hash_groupby {

// The groups of d_keys[0, n) (with d_values[0, n) unless V is void), in no particular order,
// copied to the host.
template <class K, class V>
std::vector<std::pair<K, group_acc_t<V>>> run_to_host(const K* d_keys, const V* d_values, std::size_t n,
                                                      const Options& o, EngineStats& st, Report& r,
                                                      cudaStream_t stream);

// The same with the groups left on the device: use(keys, accumulators, groups) runs while the
// workspace holds them (in key order when st.dense says the dense-range path ran, else in no
// particular order; valid only during the call).
template <class K, class V>
void run_on_device(const K* d_keys, const V* d_values, std::size_t n, const Options& o, EngineStats& st, Report& r,
                   cudaStream_t stream, const std::function<void(const K*, const group_acc_t<V>*, std::size_t)>& use);

}  // namespace tandem::hash_groupby
