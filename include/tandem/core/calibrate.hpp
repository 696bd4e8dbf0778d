// Measured bandwidths of this machine: what cost models read before splitting work.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "tandem/core/report.hpp"
#include "tandem/core/transfer.hpp"

namespace tandem {

// Bytes per second; 0 where not measured (no GPU, or the path does not exist).
struct Bandwidths {
  std::size_t bytes{0};  // buffer size measured with
  int threads{0};        // host threads used for the multi-threaded figures
  double host_memcpy_1t{0};
  double host_memcpy_mt{0};
  double pinned_h2d{0}, pinned_d2h{0}, pinned_both{0};  // both: each way, at once
  double pageable_h2d{0}, pageable_d2h{0};              // plain cudaMemcpy
  double staged_h2d{0}, staged_d2h{0}, staged_both{0};  // tandem's pipeline
  double pageable_access_h2d{0};                        // a kernel reading pageable memory (HMM/ATS), if supported
  double device_copy{0};                                // device-to-device, counting read + write bytes
  double host_register_s{0};                            // seconds to cudaHostRegister the buffer
  double host_unregister_s{0};
  TransferOptions staging;  // chunk size and threads chosen for the staged pipeline
  std::string gpu;          // GpuInfo::key() of the device measured, empty without GPU
};

struct CalibrateOptions {
  std::size_t bytes{std::size_t{256} << 20};
  int repetitions{5};
  bool tune_staging{true};  // search chunk size and threads for the staged pipeline
  bool store{true};         // write the result into the tuning cache
};

Bandwidths calibrate(const CalibrateOptions& opts = {});

// The last calibration stored for this machine, if any (a malformed entry counts as none; the
// cache's warnings go into `report` when given).
std::optional<Bandwidths> cached_bandwidths(Report* report = nullptr);

void to_json(nlohmann::json& j, const Bandwidths& b);
void from_json(const nlohmann::json& j, Bandwidths& b);
std::string describe(const Bandwidths& b);

}  // namespace tandem
