// Group-by of integer keys in GPU memory through the library's table group-by: the caller's
// arrays borrowed as a DeviceTable (no copy), grouped on the GPU hash engine, the result columns
// copied into the caller's arrays.
#include <cuda_runtime.h>

#include <string>

#include "device.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/device_table.hpp"

namespace tandem::python {
namespace {

ColumnType key_column_type(DType t) {
  switch (t) {
    case DType::u32: return ColumnType::u32;
    case DType::i32: return ColumnType::i32;
    case DType::u64: return ColumnType::u64;
    case DType::i64: return ColumnType::i64;
    default: break;
  }
  throw UsageError("device group-by: keys of type " + std::string(to_string(t)) +
                   " (expected integers: i32, i64, u32 or u64)");
}

ColumnType value_column_type(DType t) {
  if (t == DType::f64) return ColumnType::f64;
  if (t == DType::i64) return ColumnType::i64;
  throw UsageError("device group-by: values of type " + std::string(to_string(t)) + " (expected f64 or i64)");
}

Aggregation named(AggOp op, const std::string& column, const std::string& name) {
  Aggregation a;
  a.op = op;
  a.column = column;
  a.name = name;
  return a;
}

void copy_column(const DeviceTable& t, const std::string& name, void* to, std::size_t width, cudaStream_t stream) {
  if (to == nullptr || t.rows() == 0) return;
  TANDEM_CUDA(cudaMemcpyAsync(to, t.column_view(name).data, t.rows() * width, cudaMemcpyDeviceToDevice, stream));
}

}  // namespace

Report groupby_device(const DeviceGroupByCall& call) {
  if (call.n >= (std::uint64_t{1} << 32)) throw UsageError("device group-by: 2^32 rows or more");
  std::vector<DeviceColumnView> columns;
  columns.push_back({"key", key_column_type(call.key_type), call.keys});
  GroupBySpec spec{{"key"}, {named(AggOp::count_rows, "", "count")}};
  if (call.has_values) {
    columns.push_back({"value", value_column_type(call.value_type), call.values});
    for (auto [op, name] :
         {std::pair{AggOp::sum, "sum"}, {AggOp::min, "min"}, {AggOp::max, "max"}, std::pair{AggOp::mean, "mean"}})
      spec.aggs.push_back(named(op, "value", name));
  }
  // The group-by runs on streams of its own: the caller's work on its stream comes first.
  TANDEM_CUDA(cudaStreamSynchronize(call.stream));
  GroupByOptions options;
  options.device = Device::gpu;
  options.gpu_engine = GpuGroupByEngine::hash;
  auto r = groupby_on_device(DeviceTable::borrow(std::move(columns), call.n), spec, options);
  const DeviceTable& t = r.table;
  const DeviceGroupOutputs out = call.allocate(t.rows());
  copy_column(t, "key", out.keys, value_width(key_column_type(call.key_type)), call.stream);
  copy_column(t, "count", out.count, 8, call.stream);
  if (call.has_values) {
    copy_column(t, "sum", out.sum, 8, call.stream);
    copy_column(t, "min", out.min, 8, call.stream);
    copy_column(t, "max", out.max, 8, call.stream);
    copy_column(t, "mean", out.mean, 8, call.stream);
  }
  TANDEM_CUDA(cudaStreamSynchronize(call.stream));  // the result table is freed on return
  return std::move(r.report);
}

}  // namespace tandem::python
