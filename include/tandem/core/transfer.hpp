// Host <-> device copies of user memory at the speed the machine allows.
//
// Pageable memory (a std::vector) cannot be read by the copy engines directly: the driver stages
// it through a small pinned buffer on one thread (~8 GB/s). tandem stages it itself: several CPU
// threads copy chunk i+1 into a pinned slot while the DMA engine moves chunk i, so the host's
// memory bandwidth, not the driver's single-threaded staging, is the limit. Pinned sources and
// destinations go straight to cudaMemcpyAsync.
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace tandem {

struct TransferOptions {
  std::size_t chunk_bytes{0};  // 0: from `tandem calibrate` if cached, else 32 MiB
  int threads{0};              // copy threads; 0: calibrated, else min(physical cores, 16)
  int slots{3};                // pinned chunks in flight per direction
};

// The options `calibrate` stored for this machine, or the defaults.
TransferOptions calibrated_transfer_options();

}  // namespace tandem

#if TANDEM_HAS_CUDA
#include <cuda_runtime_api.h>

namespace tandem {

// Synchronous from the caller's view: returns when the bytes are in place. `stream` orders the
// copies after work already queued on it.
void copy_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream = nullptr,
                    const TransferOptions& opts = {});
void copy_to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t stream = nullptr,
                  const TransferOptions& opts = {});

// A staged pipeline that hands each chunk to a callback as soon as it is on the device, so GPU
// work on chunk i overlaps the copy of chunk i+1. on_chunk(offset, bytes, stream) enqueues work
// on `stream` (the copy stream); it must not block.
template <class F>
void copy_to_device_chunked(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
                            const TransferOptions& opts, F&& on_chunk);

// The staged pipeline with each pinned slot written by fill(slot, offset, bytes) instead of copied
// from host memory (a file read straight into the slot): bytes [offset, offset + bytes) of the
// upload. The slot's DMA overlaps the next slot's fill; returns when every byte is on the device.
template <class Fill>
void fill_to_device(void* dst, std::size_t bytes, cudaStream_t stream, const TransferOptions& opts, Fill&& fill);
// Releases the cached pinned staging slots (they are otherwise kept for reuse).
void release_staging_buffers();

}  // namespace tandem

#include "tandem/core/detail/transfer_impl.hpp"
#endif
