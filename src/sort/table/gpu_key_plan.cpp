// The GPU table sort's passes (gpu_key_plan.hpp).
#include "gpu_key_plan.hpp"

namespace tandem::detail {

std::vector<GpuKeyPass> plan_gpu_key_passes(std::span<const GpuKeyFacts> keys) {
  std::vector<GpuKeyPass> passes;
  for (std::size_t k = keys.size(); k-- > 0;) {
    const GpuKeyFacts& f = keys[k];
    if (f.present == 0) continue;  // every row missing: all equal
    const int bits = static_cast<int>(std::bit_width(f.max - f.min));
    const bool nulls = f.missing > 0;
    if (bits == 0 && !nulls) continue;  // one value in every row
    if (bits == 64 && nulls) {
      passes.push_back({k, 64, false, false});
      passes.push_back({k, 0, false, true});
    } else {
      passes.push_back({k, bits, nulls, false});
    }
  }
  return passes;
}

}  // namespace tandem::detail
