// Internal: the device-side measurements calibrate() uses (calibrate_kernels.cu). CUDA builds only.
#pragma once
#include <cstddef>

namespace tandem::detail {

double measure_device_copy(std::size_t bytes, int reps);                        // bytes/s (read+write)
double measure_pageable_access(const void* host, std::size_t bytes, int reps);  // 0 if unsupported

}  // namespace tandem::detail
