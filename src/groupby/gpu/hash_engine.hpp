// The table group-by on the GPU hash engine (src/groupby/hash/): runs it on a device table whose
// keys and aggregations it can take (engine_choice.hpp decides), sorts its groups by key on the
// device and writes the result columns as the table engine (engine.hpp) would.
#pragma once
#include <memory>
#include <string>

#include "groupby/gpu/device_columns.hpp"
#include "tandem/groupby.hpp"

namespace tandem::gpu_groupby {

#if TANDEM_HAS_CUDA
// value_column: the one column the aggregations read (empty: counts of rows only). nullptr when
// a 64-bit integer sum may have wrapped in the engine's atomics (the caller reruns the group-by
// on the CPU, which checks every sum).
std::unique_ptr<DeviceTable::Impl> run_hash(const DeviceTable::Impl& t, const GroupBySpec& spec,
                                            const std::string& value_column, int threads, Report& report);
#endif

}  // namespace tandem::gpu_groupby
