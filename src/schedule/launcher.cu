// The schedule launcher's host side: validates the schedule on the band, builds (and keeps) the
// Hilbert order tables and zeroes the ticket counter.
#include "tandem/schedule/launch.cuh"

#include <cuda_runtime.h>

#include <vector>

namespace tandem::schedule {

ScheduleView Launcher::view(const Schedule& s, Grid band, std::uint32_t x0, std::uint32_t y0, cudaStream_t stream) {
  validate(s, band);
  ScheduleView v{s, band, x0, y0, nullptr, nullptr};
  if (s.style == Style::hilbert && table_threshold_ && band.count() >= table_threshold_) {
    auto key = std::make_pair(band.w, band.h);
    auto it = tables_.find(key);
    if (it == tables_.end()) {
      std::vector<uint2> host(band.count());
      for (std::uint64_t p = 0; p < band.count(); ++p) {
        const Block b = s.at(p, band);
        host[p] = make_uint2(b.x, b.y);
      }
      gpu::DeviceBuffer<uint2> d(host.size());
      TANDEM_CUDA(cudaMemcpy(d.data(), host.data(), d.bytes(), cudaMemcpyHostToDevice));
      it = tables_.emplace(key, std::move(d)).first;
    }
    v.table = it->second.data();
  }
  if (use_ticket_) {
    if (!ticket_.size()) ticket_ = gpu::DeviceBuffer<unsigned int>(1);
    TANDEM_CUDA(cudaMemsetAsync(ticket_.data(), 0, sizeof(unsigned int), stream));
    v.ticket = ticket_.data();
  }
  return v;
}

}  // namespace tandem::schedule
