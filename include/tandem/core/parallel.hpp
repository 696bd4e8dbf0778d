// CPU parallelism helpers on OpenMP.
#pragma once
#include <cstddef>

namespace tandem {

// Threads tandem uses by default: the physical cores (hwloc), or TANDEM_THREADS when set.
int default_threads();

// memcpy split into `threads` contiguous pieces (threads <= 0: default_threads()).
void parallel_copy(void* dst, const void* src, std::size_t bytes, int threads = 0);

}  // namespace tandem
