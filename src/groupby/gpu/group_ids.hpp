// Group ids on the device: each key column becomes codes that sort as its keys (plan.hpp), the
// codes combine into a mixed-radix number, and that number is either the group id itself (few
// possible tuples) or ranked among the distinct numbers by a radix sort. Where the product of
// the columns' cardinalities would pass 2^64 the number so far is ranked first and mixing goes
// on from the ranks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "groupby/gpu/device_columns.hpp"
#include "groupby/gpu/plan.hpp"
#include "tandem/core/report.hpp"

namespace tandem::gpu_groupby {

struct KeyCodes {
  const DeviceColumn* column{nullptr};
  KeyCoding coding{KeyCoding::range};
  std::uint64_t card{1};  // codes are < card; the last one is a missing key's when missing
  bool missing{false};
  std::uint64_t lo{0};                        // range: the minimum's ordered bits
  gpu::DeviceBuffer<std::uint64_t> distinct;  // ranked: the distinct values' key bits, ascending
  std::string how() const;
};

// Key columns [begin, end) were mixed into one number; `distinct` (empty when that number was
// the id itself) holds the distinct numbers in ascending order, so rank r stands for distinct[r].
struct MixStage {
  std::size_t begin{0}, end{0};
  gpu::DeviceBuffer<std::uint64_t> distinct;
};

struct GroupIds {
  gpu::DeviceBuffer<std::uint32_t> gid;  // per row, < groups; ascending ids are the key order
  std::uint64_t groups{0};               // some ids may hold no row when the ids are direct
  std::vector<KeyCodes> keys;
  std::vector<MixStage> stages;
};

GroupIds group_ids(const DeviceTable::Impl& t, const std::vector<std::string>& by, cudaStream_t s, Report& report);

// The key columns of the given group ids (m of them, on the device), as device columns named as
// the keys, in that order (string keys as codes of their columns' dictionaries).
std::vector<DeviceColumn> key_columns(const GroupIds& ids, const std::uint32_t* groups, std::size_t m, cudaStream_t s);

}  // namespace tandem::gpu_groupby
