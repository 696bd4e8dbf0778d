// DeviceTable's members that do not depend on CUDA; a CPU-only build cannot construct one.
#include <fmt/format.h>

#include "groupby/gpu/device_columns.hpp"
#include "tandem/core/error.hpp"

namespace tandem {

#if TANDEM_HAS_CUDA
DeviceTable::DeviceTable(const Table& table, const std::vector<std::string>& columns, int threads)
    : impl_(gpu_groupby::upload(table, columns, threads)) {}
#else
DeviceTable::DeviceTable(const Table&, const std::vector<std::string>&, int) {
  throw NoDeviceError("device table: this build has no CUDA support");
}
#endif

#if !TANDEM_HAS_CUDA
DeviceTable DeviceTable::borrow(std::vector<DeviceColumnView>, std::size_t, int) {
  throw NoDeviceError("device table: this build has no CUDA support");
}

DeviceColumnView DeviceTable::column_view(std::string_view) const {
  throw NoDeviceError("device table: this build has no CUDA support");
}

DeviceSortResult sort(const DeviceTable&, const SortSpec&, const TableSortOptions&) {
  throw NoDeviceError("device table: this build has no CUDA support");
}
#endif

DeviceTable::DeviceTable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceTable::~DeviceTable() = default;
DeviceTable::DeviceTable(DeviceTable&&) noexcept = default;
DeviceTable& DeviceTable::operator=(DeviceTable&&) noexcept = default;

std::size_t DeviceTable::rows() const { return impl_->rows; }
int DeviceTable::device() const { return impl_->device; }
const Table& DeviceTable::schema() const { return impl_->schema; }
const Table& DeviceTable::host() const { return impl_->host(); }
double DeviceTable::upload_seconds() const { return impl_->upload_seconds; }

std::size_t DeviceTable::device_bytes() const {
  std::size_t bytes = 0;
#if TANDEM_HAS_CUDA
  for (const auto& c : impl_->columns) bytes += c.values.bytes() + c.validity.bytes();
#endif
  return bytes;
}

const Table& DeviceTable::Impl::host() const {
  const std::lock_guard lock(host_mutex_);
#if TANDEM_HAS_CUDA
  if (!host_) host_ = gpu_groupby::download(*this);
#endif
  return *host_;
}

}  // namespace tandem
