// The GPU table group-by: group ids (group_ids.hpp), the occupied groups in ascending id (= key
// order), each aggregation (aggregate.hpp), the result as a table on the device.
#pragma once
#include <memory>

#include "groupby/gpu/device_columns.hpp"
#include "tandem/groupby.hpp"

namespace tandem::gpu_groupby {

// nullptr when a 64-bit integer sum may have wrapped in the GPU's atomics (the caller reruns the
// group-by on the CPU, which checks every sum). threads: CPU threads for the result's download.
#if TANDEM_HAS_CUDA
std::unique_ptr<DeviceTable::Impl> run(const DeviceTable::Impl& t, const GroupBySpec& spec, int threads,
                                       Report& report);
#endif

}  // namespace tandem::gpu_groupby
