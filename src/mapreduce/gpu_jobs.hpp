// Entry points of the GPU engine for the shipped jobs (defined in the .cu files of this folder).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tandem/core/io.hpp"
#include "tandem/mapreduce.hpp"

#if TANDEM_HAS_CUDA
#include <cuda_runtime.h>

#include "core/device_context.hpp"
#include "core/device_pool.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

namespace tandem::mapreduce::detail {

#if TANDEM_HAS_CUDA
// An engine of type E for this call on the current device, from the pool of E in the device's
// context (core/device_context.hpp): engines keep device buffers between calls, one per
// concurrent caller and device.
template <class E>
typename ::tandem::detail::DevicePool<E>::Lease borrow_engine() {
  ::tandem::detail::DeviceContext& device = ::tandem::detail::current_device();
  return device.part<::tandem::detail::DevicePool<E>>().borrow(device.device());
}

// Word count of `text` (already lower-cased when asked). Throws NoDeviceError/OutOfMemoryError.
std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount(std::string_view text, const Options& o,
                                                                 EngineStats& st, Report& r);
// Word count of files (sized regular files; joined by a newline each) read in pieces straight into
// pinned slots whose upload overlaps the next piece's read; lowercase folds on the device.
std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount_files(std::vector<io::SizedFile>& files,
                                                                       bool lowercase, const Options& o,
                                                                       EngineStats& st, Report& r);
// Word count of text already in device memory (d_text, n bytes), in print order: the benchmark's
// entry point.
std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount_device(const char* d_text, std::uint64_t n,
                                                                        const Options& o, EngineStats& st, Report& r);

#endif

}  // namespace tandem::mapreduce::detail
