// A table uploaded to the GPU once, for many group-bys that then read it in device memory (as
// cuDF and the db-benchmark's GPU entries keep their data frames on the device).
//
//   tandem::DeviceTable on_gpu(table);                       // numbers copied; strings encoded
//   auto r = tandem::groupby(on_gpu, {.by = {"id1", "id2"},
//                                     .aggs = tandem::parse_aggregations("sum(v1),median(v3)")});
//
// String columns are encoded on the CPU into codes that sort as the strings do (one dictionary
// per column, built at upload) and the codes go to the device; numbers go as they are, with
// their validity bitmaps. The host table's buffers are kept (shared, not copied) for the result's
// strings and for the CPU engine where a group-by falls back to it.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tandem/groupby.hpp"
#include "tandem/table.hpp"

namespace tandem {

class DeviceTable {
 public:
  // Uploads the named columns (every column when `columns` is empty) to the current GPU.
  // NoDeviceError without a GPU or in a CPU-only build; OutOfMemoryError when it does not fit;
  // UsageError for an unknown column. threads: CPU threads for encoding strings (0: every core).
  explicit DeviceTable(const Table& table, const std::vector<std::string>& columns = {}, int threads = 0);
  ~DeviceTable();
  DeviceTable(DeviceTable&&) noexcept;
  DeviceTable& operator=(DeviceTable&&) noexcept;

  std::size_t rows() const;
  std::size_t device_bytes() const;  // device memory the columns take
  int device() const;                // the GPU they live on
  const Table& host() const;         // the uploaded columns as they are on the host
  double upload_seconds() const;     // encoding strings and copying, when constructed

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// The group-by of a device table on its GPU (options.device: auto or gpu; cpu runs the CPU
// engine on the host columns). Results and errors as groupby(const Table&, ...); a group whose
// 64-bit integer sum may have wrapped in the GPU's atomics is rerun on the CPU, which checks.
GroupByResult groupby(const DeviceTable& table, const GroupBySpec& spec, const GroupByOptions& options = {});

}  // namespace tandem
