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
//
// groupby_on_device leaves the result on the device as another DeviceTable (as cuDF returns its
// results): group it again, or copy it to the host with host().
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/groupby.hpp"
#include "tandem/table.hpp"
#include "tandem/table_sort.hpp"

namespace tandem {

// A column in GPU memory: what DeviceTable::borrow takes (numbers only, no copy) and what
// DeviceTable::column_view lends (string columns as u32 codes of their dictionary).
struct DeviceColumnView {
  std::string name;
  ColumnType type{ColumnType::i64};
  const void* data{nullptr};               // device memory of the table's rows() values
  const std::uint8_t* validity{nullptr};   // device bitmap (bit i % 8 of byte i / 8); nullptr: all present
  std::size_t missing{0};                  // column_view: rows without a value
  std::shared_ptr<const void> keep_alive;  // borrow: held while the table lives
};

class DeviceTable {
 public:
  // Uploads the named columns (every column when `columns` is empty) to the current GPU.
  // NoDeviceError without a GPU or in a CPU-only build; OutOfMemoryError when it does not fit;
  // UsageError for an unknown column. threads: CPU threads for encoding strings (0: every core).
  explicit DeviceTable(const Table& table, const std::vector<std::string>& columns = {}, int threads = 0);
  struct Impl;
  explicit DeviceTable(std::unique_ptr<Impl> impl);  // made by the library (a group-by's result)

  // Columns already in memory of the current GPU (CuPy or PyTorch arrays, say), of `rows` values
  // each, used where they are: the memory must hold still while the table lives. Number columns
  // only; UsageError for a string column, a null pointer with rows, or two columns of one name.
  static DeviceTable borrow(std::vector<DeviceColumnView> columns, std::size_t rows, int threads = 0);
  ~DeviceTable();
  DeviceTable(DeviceTable&&) noexcept;
  DeviceTable& operator=(DeviceTable&&) noexcept;

  std::size_t rows() const;
  std::size_t device_bytes() const;  // device memory the table owns (borrowed columns not counted)
  int device() const;                // the GPU they live on
  const Table& schema() const;       // the columns' names and types (no rows)
  // The columns on the host: the uploaded ones as they were, or, for a table made on the device,
  // a copy downloaded on the first call (strings decoded) and kept. Safe from several threads.
  const Table& host() const;
  double upload_seconds() const;  // encoding strings and copying, when uploaded
  // A column's device memory, valid while the table lives (UsageError naming an absent column).
  DeviceColumnView column_view(std::string_view name) const;

  const Impl& impl() const { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

// The group-by of a device table on its GPU (options.device: auto or gpu; cpu runs the CPU
// engine on the host columns). Results and errors as groupby(const Table&, ...); a group whose
// 64-bit integer sum may have wrapped in the GPU's atomics is rerun on the CPU, which checks.
GroupByResult groupby(const DeviceTable& table, const GroupBySpec& spec, const GroupByOptions& options = {});

// The same group-by with its result left on the GPU: keys and aggregates as a DeviceTable, in
// the same order, types and missing cells as groupby()'s (string columns as codes of the input's
// dictionaries). options.device: auto or gpu. A group-by the GPU cannot finish (a 64-bit sum that
// may wrap) runs on the CPU and its result is uploaded; the report says so.
struct DeviceGroupByResult {
  DeviceTable table;
  Report report;
};
DeviceGroupByResult groupby_on_device(const DeviceTable& table, const GroupBySpec& spec,
                                      const GroupByOptions& options = {});

// The rows of a device table in key order, on its GPU, as tandem::sort orders a host table
// (stable; SQL's order of numbers, strings, NaN, -0.0 and missing values): every column gathered
// there into a new DeviceTable (string columns keep their codes and dictionaries). spec.limit
// keeps the first rows of the order. Of the options only nan_is_missing applies. UsageError
// naming a key the table lacks; OutOfMemoryError when the GPU cannot hold the sort's arrays.
struct DeviceSortResult {
  DeviceTable table;
  Report report;
};
DeviceSortResult sort(const DeviceTable& table, const SortSpec& spec, const TableSortOptions& options = {});

}  // namespace tandem
