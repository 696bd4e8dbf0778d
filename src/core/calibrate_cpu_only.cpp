// Without CUDA the device-side measurements do not exist; calibrate() reports them as 0.
#include "tandem/calibrate.hpp"

#if !TANDEM_HAS_CUDA
namespace tandem::detail {
double measure_device_copy(std::size_t, int) { return 0; }
double measure_pageable_access(const void*, std::size_t, int) { return 0; }
}  // namespace tandem::detail
#endif
