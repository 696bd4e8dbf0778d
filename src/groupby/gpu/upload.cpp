// Uploading a table's columns: numbers and validity bitmaps copied as they are; strings' offsets
// and bytes copied and ranked on the GPU (codes that sort as the strings, as the CPU engine's
// dictionary gives), or, where the GPU cannot rank them, encoded by that dictionary on the CPU.
#if TANDEM_HAS_CUDA
#include <omp.h>

#include <fmt/format.h>

#include "groupby/gpu/device_columns.hpp"
#include "groupby/gpu/string_dictionary.hpp"
#include "table/gpu/string_ranks.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/cuda/to_device.hpp"

namespace tandem::gpu_groupby {
namespace {

std::vector<std::uint32_t> string_codes(const cpu_groupby::KeyColumn& dict, std::size_t n, int threads) {
  std::vector<std::uint32_t> codes(n);
  const std::size_t pieces = std::max<std::size_t>(1, std::min<std::size_t>(4 * threads, n / 65536 + 1));
#pragma omp parallel for num_threads(pieces > 1 ? threads : 1) schedule(dynamic, 1)
  for (std::size_t p = 0; p < pieces; ++p) {
    const std::size_t b = n * p / pieces, e = n * (p + 1) / pieces;
    if (e > b) dict.codes(b, e, codes.data() + b);
  }
  return codes;
}

// The dictionary keeps its own copy of the column (the buffers, shared): its strings may point
// into the column's bytes, and results that pick its codes may outlive the table.
std::shared_ptr<const cpu_groupby::KeyColumn> dictionary_of(const Column& c, int threads) {
  struct Owned {
    Column source;
    std::unique_ptr<cpu_groupby::KeyColumn> keys;
  };
  auto owned = std::make_shared<Owned>(Owned{c, nullptr});
  owned->keys = cpu_groupby::encode_key_column(owned->source, threads);
  return {owned, owned->keys.get()};
}

// The strings' offsets and bytes copied and ranked on the device: d's codes and dictionary.
// False where the GPU cannot rank them (too many rows, or too little device memory).
bool rank_on_gpu(const Column& c, DeviceColumn& d) {
  if (c.length > table_gpu::kMaxRankedRows) return false;
  try {
    gpu::DeviceBuffer<std::byte> codes(c.length * sizeof(std::uint32_t));
    gpu::Stream stream;
    auto sorted = table_gpu::rank_host_strings(c, d.validity.size() ? d.validity.data() : nullptr,
                                               reinterpret_cast<std::uint32_t*>(codes.data()), stream);
    if (!sorted) return false;
    d.values = std::move(codes);
    d.dictionary = std::make_shared<SortedStringDictionary>(c.name, std::move(*sorted), d.missing > 0);
    return true;
  } catch (const OutOfMemoryError&) {
    return false;
  }
}

DeviceColumn upload_column(const Column& c, int threads) {
  DeviceColumn d;
  d.name = c.name;
  d.type = c.type;
  d.missing = c.missing_count();
  if (d.missing) d.validity = gpu::to_device<std::uint8_t>(c.validity.data(), (c.length + 7) / 8);
  if (c.type == ColumnType::str) {
    if (!rank_on_gpu(c, d)) {
      auto dictionary = dictionary_of(c, threads);
      const auto codes = string_codes(*dictionary, c.length, threads);
      d.values = gpu::to_device<std::byte>(codes.data(), codes.size() * sizeof(std::uint32_t));
      d.dictionary = std::move(dictionary);
    }
  } else {
    d.values = gpu::to_device<std::byte>(c.values.data(), c.length * value_width(c.type));
  }
  return d;
}

}  // namespace

int checked_threads(std::size_t rows, int threads) {
  if (threads < 0)
    throw UsageError(fmt::format("device table threads: {} (expected 0 for every core, or a positive count)", threads));
  if (rows >= (std::size_t{1} << 32) - 1)
    throw UsageError(fmt::format("device table: {} rows (the GPU group-by takes fewer than 2^32)", rows));
  if (gpu_count() == 0) throw NoDeviceError("device table: no usable GPU");
  return threads > 0 ? threads : default_threads();
}

std::unique_ptr<DeviceTable::Impl> upload(const Table& table, const std::vector<std::string>& columns, int threads) {
  threads = checked_threads(table.rows(), threads);
  Stopwatch w;
  auto impl = std::make_unique<DeviceTable::Impl>();
  TANDEM_CUDA(cudaGetDevice(&impl->device));
  Table host;
  if (columns.empty()) {
    host = table;
  } else {
    for (const auto& name : columns) host.add(table.column(name));
  }
  for (const auto& c : host.columns()) impl->columns.push_back(upload_column(c, threads));
  impl->rows = table.rows();
  impl->threads = threads;
  impl->describe_columns();
  impl->set_host(std::move(host));
  impl->upload_seconds = w.seconds();
  return impl;
}

}  // namespace tandem::gpu_groupby

namespace tandem {

DeviceTable DeviceTable::borrow(std::vector<DeviceColumnView> columns, std::size_t rows, int threads) {
  auto impl = std::make_unique<Impl>();
  impl->threads = gpu_groupby::checked_threads(rows, threads);
  TANDEM_CUDA(cudaGetDevice(&impl->device));
  impl->rows = rows;
  for (auto& v : columns) {
    if (v.type == ColumnType::str)
      throw UsageError(fmt::format("device table: column '{}' is text; only number columns are borrowed", v.name));
    if (v.data == nullptr && rows > 0)
      throw UsageError(fmt::format("device table: column '{}' has no device memory", v.name));
    gpu_groupby::DeviceColumn c;
    c.name = v.name;
    c.type = v.type;
    c.borrowed_values = static_cast<const std::byte*>(v.data);
    c.borrowed_validity = v.validity;
    c.owner = std::move(v.keep_alive);
    c.missing = rows - gpu_groupby::present_rows(c, rows);
    impl->columns.push_back(std::move(c));
  }
  impl->describe_columns();  // UsageError for two columns of one name
  return DeviceTable(std::move(impl));
}

DeviceColumnView DeviceTable::column_view(std::string_view name) const {
  const auto& c = impl_->column(name);
  return {c.name, c.type, c.data(), c.valid(), c.missing, {}};
}

}  // namespace tandem

#endif  // TANDEM_HAS_CUDA
