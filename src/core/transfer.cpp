#include "tandem/core/transfer.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/device.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/tune.hpp"
#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

namespace tandem {

TransferOptions calibrated_transfer_options() {
  TransferOptions o;
  o.chunk_bytes = std::size_t{32} << 20;
  o.threads = std::min(16, default_threads());
#if TANDEM_HAS_CUDA
  if (gpu_count() > 0) {
    auto parse = [](const nlohmann::json& j) {
      return std::pair{positive_field<std::size_t>(j, "chunk_bytes"), positive_field<int>(j, "threads")};
    };
    if (auto c = TuningCache::global().lookup("transfer.staged", gpu_info().front().key(), cpu_key(), parse)) {
      o.chunk_bytes = c->first;
      o.threads = c->second;
    }
  }
#endif
  return o;
}

}  // namespace tandem

#if TANDEM_HAS_CUDA
namespace tandem {
namespace {

TransferOptions resolve(const TransferOptions& in) {
  static const TransferOptions cal = calibrated_transfer_options();
  TransferOptions o = in;
  if (o.chunk_bytes == 0) o.chunk_bytes = cal.chunk_bytes;
  if (o.threads <= 0) o.threads = cal.threads;
  o.slots = std::max(2, o.slots);
  return o;
}

// A set of pinned chunks with an event each; sets are kept and reused between calls because
// cudaHostAlloc costs ~40 ms per GiB.
struct SlotSet {
  std::size_t chunk_bytes{0};
  std::vector<gpu::PinnedBuffer<char>> buffers;
  std::vector<gpu::Event> done;
  int device{0};
};

class StagingPool {
 public:
  std::unique_ptr<SlotSet> acquire(std::size_t chunk_bytes, int slots) {
    int dev = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    {
      std::lock_guard lock(mu_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if ((*it)->chunk_bytes == chunk_bytes && static_cast<int>((*it)->buffers.size()) >= slots &&
            (*it)->device == dev) {
          auto s = std::move(*it);
          free_.erase(it);
          return s;
        }
      }
    }
    auto s = std::make_unique<SlotSet>();
    s->chunk_bytes = chunk_bytes;
    s->device = dev;
    for (int i = 0; i < slots; ++i) {
      s->buffers.emplace_back(chunk_bytes);
      s->done.emplace_back(false);
    }
    return s;
  }
  void release(std::unique_ptr<SlotSet> s) {
    std::lock_guard lock(mu_);
    free_.push_back(std::move(s));
    while (free_.size() > 4) free_.erase(free_.begin());
  }
  void clear() {
    std::lock_guard lock(mu_);
    free_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<SlotSet>> free_;
};

StagingPool& pool() {
  static auto* p = new StagingPool;  // never destroyed: CUDA may be torn down before statics
  return *p;
}

struct Lease {
  std::unique_ptr<SlotSet> set;
  ~Lease() {
    if (set) {
      for (auto& e : set->done) cudaEventSynchronize(e.get());
      pool().release(std::move(set));
    }
  }
};

}  // namespace

namespace detail {

void staged_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, const TransferOptions& in,
                      const ChunkCallback& on_chunk) {
  if (bytes == 0) return;
  const TransferOptions o = resolve(in);
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (gpu::is_pinned(src)) {
    for (std::size_t off = 0; off < bytes; off += o.chunk_bytes) {
      const std::size_t len = std::min(o.chunk_bytes, bytes - off);
      TANDEM_CUDA(cudaMemcpyAsync(d + off, s + off, len, cudaMemcpyHostToDevice, stream));
      if (on_chunk) on_chunk(off, len, stream);
    }
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    return;
  }
  staged_fill_to_device(
      dst, bytes, stream, o,
      [&](char* slot, std::size_t off, std::size_t len) { parallel_copy(slot, s + off, len, o.threads); }, on_chunk);
}

void staged_fill_to_device(void* dst, std::size_t bytes, cudaStream_t stream, const TransferOptions& in,
                           const FillCallback& fill, const ChunkCallback& on_chunk) {
  if (bytes == 0) return;
  const TransferOptions o = resolve(in);
  auto* d = static_cast<char*>(dst);
  Lease lease{pool().acquire(o.chunk_bytes, o.slots)};
  auto& set = *lease.set;
  std::size_t chunk = 0;
  for (std::size_t off = 0; off < bytes; off += o.chunk_bytes, ++chunk) {
    const std::size_t len = std::min(o.chunk_bytes, bytes - off);
    const std::size_t slot = chunk % o.slots;
    set.done[slot].sync();  // the DMA that last read this slot has finished
    fill(set.buffers[slot].data(), off, len);
    TANDEM_CUDA(cudaMemcpyAsync(d + off, set.buffers[slot].data(), len, cudaMemcpyHostToDevice, stream));
    if (on_chunk) on_chunk(off, len, stream);
    set.done[slot].record(stream);
  }
  TANDEM_CUDA(cudaStreamSynchronize(stream));
}

}  // namespace detail

void copy_to_device(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, const TransferOptions& opts) {
  detail::staged_to_device(dst, src, bytes, stream, opts, nullptr);
}

void copy_to_host(void* dst, const void* src, std::size_t bytes, cudaStream_t stream, const TransferOptions& in) {
  if (bytes == 0) return;
  const TransferOptions o = resolve(in);
  if (gpu::is_pinned(dst)) {
    TANDEM_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    return;
  }
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  Lease lease{pool().acquire(o.chunk_bytes, o.slots)};
  auto& set = *lease.set;
  const std::size_t chunks = (bytes + o.chunk_bytes - 1) / o.chunk_bytes;
  auto issue = [&](std::size_t c) {
    const std::size_t off = c * o.chunk_bytes;
    const std::size_t len = std::min(o.chunk_bytes, bytes - off);
    const std::size_t slot = c % o.slots;
    TANDEM_CUDA(cudaMemcpyAsync(set.buffers[slot].data(), s + off, len, cudaMemcpyDeviceToHost, stream));
    set.done[slot].record(stream);
  };
  // Keep every slot busy: DMA runs `slots` chunks ahead of the host copies.
  for (std::size_t c = 0; c < std::min<std::size_t>(chunks, o.slots); ++c) issue(c);
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t off = c * o.chunk_bytes;
    const std::size_t len = std::min(o.chunk_bytes, bytes - off);
    const std::size_t slot = c % o.slots;
    set.done[slot].sync();
    parallel_copy(d + off, set.buffers[slot].data(), len, o.threads);
    if (c + o.slots < chunks) issue(c + o.slots);
  }
}

void release_staging_buffers() { pool().clear(); }

}  // namespace tandem
#endif
