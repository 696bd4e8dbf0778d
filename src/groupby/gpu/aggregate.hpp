// The aggregations of the GPU table group-by. Decomposable ones (counts, sums, means, min, max,
// first, last, var and std) update per-group states with atomics; holistic ones (median,
// quantile, nunique, top) sort each value column once by (group, value) and read each group's
// run. Results come back for the occupied groups only, in ascending group id.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include <cuda_runtime.h>

#include "groupby/cpu_scratch.hpp"
#include "groupby/gpu/group_ids.hpp"
#include "tandem/groupby.hpp"

namespace tandem::gpu_groupby {

struct SortedValues;

class Aggregations {
 public:
  // present_groups: the m occupied group ids on the device; rows: each group id's row count.
  Aggregations(const DeviceTable::Impl& t, const GroupIds& ids, const std::uint32_t* present_groups, std::size_t m,
               const std::uint64_t* rows, cudaStream_t s, int threads);
  ~Aggregations();
  // The output column(s) of one aggregation; nothing when a 64-bit integer sum may have wrapped.
  std::optional<std::vector<Column>> run(const Aggregation& a, Report& report);

 private:
  template <class T>
  std::optional<std::vector<Column>> numbers(const Aggregation& a, const DeviceColumn& c, Report& report);
  template <class T>
  std::vector<Column> top_by_levels(const Aggregation& a, const DeviceColumn& c);
  template <class T>
  std::vector<Column> holistic(const Aggregation& a, const DeviceColumn& c);
  std::vector<Column> strings(const Aggregation& a, const DeviceColumn& c);
  const std::uint64_t* present_counts(const DeviceColumn& c);
  // The occupied groups' counts on the host, copied once per column (nullptr: the row counts).
  const std::uint64_t* host_counts(const DeviceColumn* c, const std::uint64_t* device_counts);
  template <class S>
  cpu_groupby::Scratch<S> gathered(const S* per_group);
  template <class T>
  const SortedValues& sorted(const DeviceColumn& c);

  const DeviceTable::Impl& t_;
  const GroupIds& ids_;
  const std::uint32_t* groups_;
  std::size_t m_;
  const std::uint64_t* rows_;
  cudaStream_t s_;
  int threads_;
  std::map<const DeviceColumn*, gpu::DeviceBuffer<unsigned long long>> present_;  // present values per group
  std::map<const DeviceColumn*, std::unique_ptr<SortedValues>> sorted_;
  // Present values per occupied group on the host, per column (nullptr: the row counts), and
  // those of the column present_counts() was last asked for.
  std::map<const DeviceColumn*, cpu_groupby::Scratch<std::uint64_t>> host_present_;
  const std::uint64_t* host_counts_{nullptr};
};

}  // namespace tandem::gpu_groupby
