// tandem::sort of a DeviceTable: the row order of its key columns found on its GPU
// (sort/table/gpu_row_order), then every column gathered there in that order.
#include <string>

#include "groupby/gpu/device_columns.hpp"
#include "sort/table/gpu_row_order.hpp"
#include "sort/table/key_layout.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/device_table.hpp"

namespace tandem {
namespace {

constexpr unsigned kBlock = 256;
unsigned blocks(std::size_t items) { return gpu::grid_for(items, kBlock, 4096); }

template <class T>
__global__ void gather_values(const T* in, const std::uint32_t* order, std::size_t n, T* out) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) out[i] = in[order[i]];
}

// One output byte of the validity bitmap per thread.
__global__ void gather_validity(const std::uint8_t* in, const std::uint32_t* order, std::size_t n, std::uint8_t* out) {
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t b = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; b < (n + 7) / 8; b += stride) {
    std::uint8_t bits = 0;
    for (std::size_t j = 0; j < 8 && 8 * b + j < n; ++j) {
      const std::uint32_t r = order[8 * b + j];
      bits |= static_cast<std::uint8_t>(((in[r >> 3] >> (r & 7)) & 1u) << j);
    }
    out[b] = bits;
  }
}

gpu_groupby::DeviceColumn gather_column(const gpu_groupby::DeviceColumn& c, const std::uint32_t* order, std::size_t n,
                                        cudaStream_t stream) {
  gpu_groupby::DeviceColumn d;
  d.name = c.name;
  d.type = c.type;
  d.dictionary = c.dictionary;
  const std::size_t width = c.type == ColumnType::str ? sizeof(std::uint32_t) : value_width(c.type);
  d.values = gpu::DeviceBuffer<std::byte>(n * width);
  if (n > 0) {
    if (width == 8) {
      gather_values<<<blocks(n), kBlock, 0, stream>>>(c.as<std::uint64_t>(), order, n,
                                                      reinterpret_cast<std::uint64_t*>(d.values.data()));
    } else {
      gather_values<<<blocks(n), kBlock, 0, stream>>>(c.as<std::uint32_t>(), order, n,
                                                      reinterpret_cast<std::uint32_t*>(d.values.data()));
    }
    TANDEM_CUDA_LAUNCH("gather_values");
  }
  if (c.valid() != nullptr && n > 0) {
    d.validity = gpu::DeviceBuffer<std::uint8_t>((n + 7) / 8);
    gather_validity<<<blocks((n + 7) / 8), kBlock, 0, stream>>>(c.valid(), order, n, d.validity.data());
    TANDEM_CUDA_LAUNCH("gather_validity");
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    d.missing = n - gpu_groupby::present_rows(d, n);
    if (d.missing == 0) d.validity = {};
  }
  return d;
}

}  // namespace

DeviceSortResult sort(const DeviceTable& table, const SortSpec& spec, const TableSortOptions& options) {
  const DeviceTable::Impl& t = table.impl();
  const auto layout = detail::plan_key_layout(t.schema, spec, options);  // checks the keys
  gpu_groupby::OnDevice on(t.device);
  Report report;
  report.operation = "sort";
  gpu::Stream stream;
  Stopwatch sw;
  std::vector<detail::DeviceKeyColumn> keys;
  std::vector<std::string> names;
  for (const auto& f : layout.fields) {
    const auto& c = t.columns[f.column];
    keys.push_back({c.type, c.data(), c.valid(), f.descending});
    names.push_back(c.name);
  }
  auto order = detail::device_row_order(keys, names, t.rows, spec.nulls, options.nan_is_missing, stream);
  report.add("sort keys", "gpu", sw.seconds(), "stable radix sort per key, last key first: " + order.passes);
  Stopwatch g;
  const std::size_t n = spec.limit ? std::min(*spec.limit, t.rows) : t.rows;
  auto impl = std::make_unique<DeviceTable::Impl>();
  impl->rows = n;
  impl->device = t.device;
  impl->threads = t.threads;
  for (const auto& c : t.columns) impl->columns.push_back(gather_column(c, order.rows.data(), n, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  impl->describe_columns();
  report.add(
      "gather", "gpu", g.seconds(),
      std::to_string(t.columns.size()) + " columns x " + std::to_string(n) + " rows in key order" +
          (n < t.rows ? " (the first " + std::to_string(n) + " of " + std::to_string(t.rows) + ")" : std::string()));
  return {DeviceTable(std::move(impl)), std::move(report)};
}

}  // namespace tandem
