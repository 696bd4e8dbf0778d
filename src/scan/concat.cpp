#include "scan/concat.hpp"

#include "scan/column_out.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "tandem/core/parallel.hpp"

namespace tandem::scan {
namespace {

std::shared_ptr<std::byte> raw(std::size_t n) { return RawArray::block(n); }

Column concatenate_column(const std::vector<Table>& parts, std::size_t j) {
  const Column& first = parts.front().column(j);
  Column out;
  out.name = first.name;
  out.type = first.type;
  std::size_t rows = 0, bytes = 0;
  bool any_missing = false;
  for (const auto& t : parts) {
    const Column& c = t.column(j);
    rows += c.length;
    bytes += first.type == ColumnType::str ? c.string_offsets()[c.length] : c.length * value_width(c.type);
    any_missing |= !c.validity.empty();
  }
  out.length = rows;
  auto values = raw(bytes);
  std::shared_ptr<std::byte> offsets = first.type == ColumnType::str ? raw((rows + 1) * 8) : nullptr;
  std::size_t row = 0, byte = 0;
  std::vector<std::uint8_t> bits(any_missing ? (rows + 7) / 8 : 0, 0);
  for (const auto& t : parts) {
    const Column& c = t.column(j);
    const std::size_t n = first.type == ColumnType::str ? c.string_offsets()[c.length] : c.length * value_width(c.type);
    if (n) std::memcpy(values.get() + byte, c.values.data(), n);
    if (offsets) {
      auto* o = reinterpret_cast<std::uint64_t*>(offsets.get());
      const auto src = c.string_offsets();
      for (std::size_t i = 0; i < c.length; ++i) o[row + i] = byte + src[i];
    }
    if (any_missing)
      for (std::size_t i = 0; i < c.length; ++i)
        if (c.present(i)) bits[(row + i) >> 3] |= static_cast<std::uint8_t>(1u << ((row + i) & 7));
    row += c.length;
    byte += n;
  }
  if (offsets) reinterpret_cast<std::uint64_t*>(offsets.get())[rows] = byte;
  out.values = Buffer::borrow(values.get(), bytes, values);
  if (offsets) out.offsets = Buffer::borrow(offsets.get(), (rows + 1) * 8, offsets);
  if (any_missing) out.validity = Buffer::take(std::move(bits));
  return out;
}

}  // namespace

Table concatenate(const std::vector<Table>& parts, int threads) {
  if (parts.empty()) return {};
  const std::size_t ncols = parts.front().num_columns();
  std::vector<Column> columns(ncols);
  // Each column allocates: an exception (bad_alloc) is carried out of the threads.
  parallel_for(ncols, std::max(threads, 1), [&](std::size_t j) { columns[j] = concatenate_column(parts, j); });
  return Table(std::move(columns));
}

}  // namespace tandem::scan
