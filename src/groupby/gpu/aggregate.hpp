// The aggregations of the GPU table group-by. Decomposable ones (counts, sums, means, min, max,
// first, last, var and std) update per-group states with atomics; holistic ones (median,
// quantile, nunique, top) sort each value column once by (group, value) and read each group's
// run (top of up to four values reads levels by atomics instead). Results are device columns of
// the occupied groups, in ascending group id.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <cuda_runtime.h>

#include "groupby/gpu/device_columns.hpp"
#include "groupby/gpu/group_ids.hpp"
#include "tandem/groupby.hpp"

namespace tandem::gpu_groupby {

struct SortedValues;

class Aggregations {
 public:
  // present_groups: the m occupied group ids on the device; rows: each group id's row count.
  Aggregations(const DeviceTable::Impl& t, const GroupIds& ids, const std::uint32_t* present_groups, std::size_t m,
               const std::uint64_t* rows, cudaStream_t s);
  ~Aggregations();
  // The output column(s) of one aggregation; nothing when a 64-bit integer sum may have wrapped.
  std::optional<std::vector<DeviceColumn>> run(const Aggregation& a, Report& report);

 private:
  template <class T>
  std::optional<std::vector<DeviceColumn>> numbers(const Aggregation& a, const DeviceColumn& c, Report& report);
  template <class T>
  std::vector<DeviceColumn> extremes(const Aggregation& a, const DeviceColumn& c);
  template <class T>
  std::optional<DeviceColumn> integer_sum(const Aggregation& a, const DeviceColumn& c, Report& report);
  template <class T>
  std::vector<DeviceColumn> top_by_levels(const Aggregation& a, const DeviceColumn& c);
  template <class T>
  std::vector<DeviceColumn> holistic(const Aggregation& a, const DeviceColumn& c);
  std::vector<DeviceColumn> strings(const Aggregation& a, const DeviceColumn& c);
  // Each group id's count of present values of c (the row counts when c has no missing value).
  const std::uint64_t* present_counts(const DeviceColumn& c);
  template <class S>
  std::vector<S> gathered(const S* per_group);
  template <class T>
  const SortedValues& sorted(const DeviceColumn& c);

  const DeviceTable::Impl& t_;
  const GroupIds& ids_;
  const std::uint32_t* groups_;
  std::size_t m_;
  const std::uint64_t* rows_;
  cudaStream_t s_;
  std::map<const DeviceColumn*, gpu::DeviceBuffer<unsigned long long>> present_;  // present values per group
  std::map<const DeviceColumn*, std::unique_ptr<SortedValues>> sorted_;
};

}  // namespace tandem::gpu_groupby
