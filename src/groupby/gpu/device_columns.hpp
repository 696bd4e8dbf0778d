// What a DeviceTable holds: each uploaded column's device arrays (numbers as they are, strings as
// dictionary codes) and validity bitmap, next to the host table they came from.
#pragma once
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "groupby/cpu_keys.hpp"
#include "tandem/device_table.hpp"

#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#endif

namespace tandem::gpu_groupby {

#if TANDEM_HAS_CUDA
struct DeviceColumn {
  std::size_t index{0};  // in the host table
  ColumnType type{ColumnType::i64};
  gpu::DeviceBuffer<std::byte> values;       // numbers as on the host; strings: u32 codes
  gpu::DeviceBuffer<std::uint8_t> validity;  // empty when every row is present
  std::size_t missing{0};
  std::unique_ptr<cpu_groupby::KeyColumn> dictionary;  // strings: codes back to strings

  const std::uint8_t* valid() const { return validity.size() ? validity.data() : nullptr; }
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(values.data());
  }
};
#endif

// Uploads the named columns (all when empty) to the current device.
std::unique_ptr<DeviceTable::Impl> upload(const Table& table, const std::vector<std::string>& columns, int threads);

}  // namespace tandem::gpu_groupby

namespace tandem {

struct DeviceTable::Impl {
  Table host;
  int device{0};
  double upload_seconds{0};
#if TANDEM_HAS_CUDA
  std::vector<gpu_groupby::DeviceColumn> columns;
  const gpu_groupby::DeviceColumn& column(std::string_view name) const;
  const Column& host_column(const gpu_groupby::DeviceColumn& c) const { return host.column(c.index); }
#endif
};

}  // namespace tandem
