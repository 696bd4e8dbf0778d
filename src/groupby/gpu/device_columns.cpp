// A device table's schema, its columns by name, and its download to the host.
#if TANDEM_HAS_CUDA
#include "groupby/gpu/device_columns.hpp"

#include <limits>

#include "groupby/cpu_output.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::gpu_groupby {
namespace {

Buffer validity_of(const DeviceColumn& c, std::size_t n, cudaStream_t s) {
  if (c.missing == 0 || n == 0) return {};
  Scratch<std::uint8_t> bits((n + 7) / 8);
  copy_to_host(bits.data(), c.valid(), bits.size(), s);
  return cpu_groupby::scratch_buffer(std::move(bits));
}

Column numbers_to_host(const DeviceColumn& c, std::size_t n, cudaStream_t s) {
  Column out;
  out.name = c.name;
  out.type = c.type;
  out.length = n;
  Scratch<std::byte> v(n * value_width(c.type));
  if (!v.empty()) copy_to_host(v.data(), c.data(), v.size(), s);
  out.values = cpu_groupby::scratch_buffer(std::move(v));
  out.validity = validity_of(c, n, s);
  return out;
}

// Codes decoded through the column's dictionary; a missing row gets a code past every string's.
Column strings_to_host(const DeviceColumn& c, std::size_t n, int threads, cudaStream_t s) {
  Scratch<std::uint32_t> codes(n);
  if (n) copy_to_host(codes.data(), c.data(), n * sizeof(std::uint32_t), s);
  if (const Buffer valid = validity_of(c, n, s); !valid.empty()) {
    const auto* bits = reinterpret_cast<const std::uint8_t*>(valid.data());
    for (std::size_t i = 0; i < n; ++i)
      if (!((bits[i >> 3] >> (i & 7)) & 1u)) codes[i] = std::numeric_limits<std::uint32_t>::max();
  }
  Column out = c.dictionary->decode(std::span<const std::uint32_t>(codes), threads);
  out.name = c.name;
  return out;
}

}  // namespace

Table download(const DeviceTable::Impl& t) {
  const OnDevice on(t.device);
  gpu::Stream stream;
  Table out;
  for (const auto& c : t.columns)
    out.add(c.type == ColumnType::str ? strings_to_host(c, t.rows, t.threads, stream)
                                      : numbers_to_host(c, t.rows, stream));
  return out;
}

}  // namespace tandem::gpu_groupby

namespace tandem {

const gpu_groupby::DeviceColumn& DeviceTable::Impl::column(std::string_view name) const {
  const Column& c = schema.column(name);  // UsageError naming the column when absent
  return columns.at(static_cast<std::size_t>(&c - schema.columns().data()));
}

void DeviceTable::Impl::describe_columns() {
  schema = Table();
  for (const auto& c : columns) {
    Column empty;
    empty.name = c.name;
    empty.type = c.type;
    if (c.type == ColumnType::str) empty.offsets = Buffer::take(std::vector<std::uint64_t>{0});
    schema.add(std::move(empty));
  }
}

}  // namespace tandem

#endif  // TANDEM_HAS_CUDA
