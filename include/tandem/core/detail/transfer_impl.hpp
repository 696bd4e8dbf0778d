// Implementation detail of tandem/core/transfer.hpp: the staging pipeline shared by the plain and the
// chunk-callback forms.
#pragma once
#include <algorithm>
#include <functional>

namespace tandem::detail {

using ChunkCallback = std::function<void(std::size_t offset, std::size_t bytes, cudaStream_t stream)>;
using FillCallback = std::function<void(char* slot, std::size_t offset, std::size_t bytes)>;

void staged_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, const TransferOptions& opts,
                      const ChunkCallback& on_chunk);
void staged_fill_to_device(void* dst, std::size_t bytes, cudaStream_t stream, const TransferOptions& opts,
                           const FillCallback& fill, const ChunkCallback& on_chunk);

}  // namespace tandem::detail

namespace tandem {

template <class F>
void copy_to_device_chunked(void* dst, const void* src, std::size_t bytes, cudaStream_t stream,
                            const TransferOptions& opts, F&& on_chunk) {
  detail::staged_to_device(dst, src, bytes, stream, opts, detail::ChunkCallback(std::forward<F>(on_chunk)));
}

template <class Fill>
void fill_to_device(void* dst, std::size_t bytes, cudaStream_t stream, const TransferOptions& opts, Fill&& fill) {
  detail::staged_fill_to_device(dst, bytes, stream, opts, detail::FillCallback(std::forward<Fill>(fill)), nullptr);
}

}  // namespace tandem
