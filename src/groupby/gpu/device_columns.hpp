// What a DeviceTable holds: each column's device arrays (numbers as they are, strings as
// dictionary codes) and validity bitmap, its name and type (the schema), and the host columns:
// for an uploaded table the ones it came from, for a table made on the device (a group-by's
// result) a copy downloaded on first request.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "groupby/cpu_keys.hpp"
#include "tandem/device_table.hpp"

#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#endif

namespace tandem::gpu_groupby {

#if TANDEM_HAS_CUDA
struct DeviceColumn {
  std::string name;
  ColumnType type{ColumnType::i64};
  gpu::DeviceBuffer<std::byte> values;       // numbers as on the host; strings: u32 codes
  gpu::DeviceBuffer<std::uint8_t> validity;  // the host's bitmap layout; empty when every row is present
  std::size_t missing{0};
  // Strings: codes back to strings (shared by the group-by results that pick codes of this column).
  std::shared_ptr<const cpu_groupby::KeyDecoder> dictionary;
  // A borrowed column (DeviceTable::borrow) points at its owner's memory instead.
  const std::byte* borrowed_values{nullptr};
  const std::uint8_t* borrowed_validity{nullptr};
  std::shared_ptr<const void> owner;

  const std::byte* data() const { return borrowed_values ? borrowed_values : values.data(); }
  const std::uint8_t* valid() const {
    if (borrowed_values) return borrowed_validity;
    return validity.size() ? validity.data() : nullptr;
  }
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(data());
  }
};

// How many of a column's `rows` values are present (counted on the device).
std::size_t present_rows(const DeviceColumn& c, std::size_t rows);
#endif

// The checks every device table makes (UsageError for a negative thread count or 2^32 rows,
// NoDeviceError without a GPU); the CPU threads to use.
int checked_threads(std::size_t rows, int threads);

// Uploads the named columns (all when empty) to the current device.
std::unique_ptr<DeviceTable::Impl> upload(const Table& table, const std::vector<std::string>& columns, int threads);

#if TANDEM_HAS_CUDA
// A device table's columns copied to the host, strings decoded through their dictionaries.
Table download(const DeviceTable::Impl& t);

// Makes a device current for a scope and restores the caller's.
class OnDevice {
 public:
  explicit OnDevice(int device) {
    TANDEM_CUDA(cudaGetDevice(&previous_));
    if (device != previous_) TANDEM_CUDA(cudaSetDevice(device));
  }
  ~OnDevice() { cudaSetDevice(previous_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int previous_{0};
};
#endif

}  // namespace tandem::gpu_groupby

namespace tandem {

struct DeviceTable::Impl {
  std::size_t rows{0};
  int device{0};
  int threads{1};  // CPU threads for a download
  double upload_seconds{0};
  Table schema;  // names and types, no rows
#if TANDEM_HAS_CUDA
  std::vector<gpu_groupby::DeviceColumn> columns;
  // UsageError naming the column when absent.
  const gpu_groupby::DeviceColumn& column(std::string_view name) const;
  // Fills `schema` from the columns.
  void describe_columns();
#endif
  // The host columns: set at upload, or downloaded once on first request.
  const Table& host() const;
  void set_host(Table t) { host_ = std::move(t); }

 private:
  mutable std::mutex host_mutex_;
  mutable std::optional<Table> host_;
};

}  // namespace tandem
