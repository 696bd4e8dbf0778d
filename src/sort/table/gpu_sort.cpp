// The host table's row order on the GPU (gpu_sort.hpp).
#include "sort/table/gpu_sort.hpp"

#include <fmt/format.h>

#include "sort/table/key_layout.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

#if TANDEM_HAS_CUDA
#include "sort/table/gpu_row_order.hpp"
#include "table/gpu/string_ranks.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/cuda/to_device.hpp"
#endif

namespace tandem::detail {

bool table_sort_on_gpu(Device device, std::size_t rows) {
  if (device == Device::gpu) return true;
  return device == Device::auto_ && TANDEM_HAS_CUDA && rows >= kGpuTableSortMinRows && gpu_count() > 0;
}

#if TANDEM_HAS_CUDA
namespace {

// One key column's device arrays (kept alive while the order is found).
struct UploadedKey {
  gpu::DeviceBuffer<std::byte> values;
  gpu::DeviceBuffer<std::uint8_t> validity;
};

// False where the GPU cannot rank the strings (too many rows).
bool upload_key(const Column& c, UploadedKey& u, cudaStream_t stream) {
  if (c.missing_count() > 0) u.validity = gpu::to_device<std::uint8_t>(c.validity.data(), (c.length + 7) / 8);
  if (c.type != ColumnType::str) {
    u.values = gpu::to_device<std::byte>(c.values.data(), c.length * value_width(c.type));
    return true;
  }
  if (c.length > table_gpu::kMaxRankedRows) return false;
  u.values = gpu::DeviceBuffer<std::byte>(c.length * sizeof(std::uint32_t));
  const std::uint8_t* validity = u.validity.size() ? u.validity.data() : nullptr;
  return table_gpu::rank_host_strings(c, validity, reinterpret_cast<std::uint32_t*>(u.values.data()), stream)
      .has_value();
}

}  // namespace

std::optional<std::vector<std::size_t>> gpu_row_order(const Table& table, const SortSpec& spec,
                                                      const TableSortOptions& options, Report& report) {
  const KeyLayout layout = plan_key_layout(table, spec, options);  // checks the keys
  if (gpu_count() == 0) throw NoDeviceError("table sort: no usable GPU");
  const std::size_t n = table.rows();
  if (n >= (std::size_t{1} << 32) - 1) {
    report.note(fmt::format("table sort: {} rows are too many for the GPU's 32-bit row order; sorted on the CPU", n));
    return std::nullopt;
  }
  try {
    gpu::Stream stream;
    Stopwatch up;
    std::vector<UploadedKey> uploaded(layout.fields.size());
    std::vector<DeviceKeyColumn> keys;
    std::vector<std::string> names;
    for (std::size_t k = 0; k < layout.fields.size(); ++k) {
      const Column& c = table.columns()[layout.fields[k].column];
      if (!upload_key(c, uploaded[k], stream)) {
        report.note(
            fmt::format("table sort: column '{}' has too many rows to rank its strings on the GPU; sorted on "
                        "the CPU",
                        c.name));
        return std::nullopt;
      }
      keys.push_back({c.type, uploaded[k].values.data(),
                      uploaded[k].validity.size() ? uploaded[k].validity.data() : nullptr,
                      layout.fields[k].descending});
      names.push_back(c.name);
    }
    report.add("upload keys", "gpu", up.seconds(),
               fmt::format("{} key column{} of {} rows (strings ranked on the GPU)", keys.size(),
                           keys.size() == 1 ? "" : "s", n));
    Stopwatch sw;
    auto order = device_row_order(keys, names, n, spec.nulls, options.nan_is_missing, stream);
    report.add("sort keys", "gpu", sw.seconds(), "stable radix sort per key, last key first: " + order.passes);
    Stopwatch down;
    const std::size_t k = spec.limit ? std::min(*spec.limit, n) : n;
    std::vector<std::uint32_t> rows32(k);
    if (k) copy_to_host(rows32.data(), order.rows.data(), k * sizeof(std::uint32_t), stream);
    std::vector<std::size_t> rows(k);
    const int T = options.threads > 0 ? options.threads : default_threads();
#pragma omp parallel for num_threads(T) schedule(static)
    for (std::size_t i = 0; i < k; ++i) rows[i] = rows32[i];
    report.add("download order", "gpu", down.seconds(),
               fmt::format("{} row indices{}", k, k < n ? fmt::format(" (the first {} of {})", k, n) : ""));
    return rows;
  } catch (const OutOfMemoryError& e) {
    report.note(fmt::format("table sort: the GPU ran out of memory ({}); sorted on the CPU", e.what()));
    return std::nullopt;
  }
}
#else
std::optional<std::vector<std::size_t>> gpu_row_order(const Table&, const SortSpec&, const TableSortOptions&, Report&) {
  throw NoDeviceError("table sort: this build has no CUDA support");
}
#endif

}  // namespace tandem::detail
