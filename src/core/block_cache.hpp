// Freed device blocks kept for the next allocation of about the same size. cudaMalloc and cudaFree
// of a few megabytes cost tens to hundreds of microseconds each (cudaFree also waits for the
// device): more than the kernels of a small group-by whose result columns are allocated and freed
// on every call. Pure bookkeeping, tested on the CPU: the caller allocates, frees and
// synchronises (gpu.cpp), and holds a lock around it.
#pragma once
#include <cstddef>
#include <vector>

namespace tandem::gpu {

struct CachedBlock {
  void* p{nullptr};
  std::size_t bytes{0};
  int device{0};
};

class BlockCache {
 public:
  // Blocks above max_block bytes are never kept, nor more than max_total bytes in all.
  BlockCache(std::size_t max_block, std::size_t max_total) : max_block_(max_block), max_total_(max_total) {}

  // The smallest kept block of `device` that holds `bytes` without wasting more than a quarter
  // (plus 4 KiB), removed from the cache; nullptr when none does.
  void* take(int device, std::size_t bytes) {
    std::size_t best = blocks_.size();
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      const CachedBlock& b = blocks_[i];
      if (b.device != device || b.bytes < bytes || b.bytes > bytes + bytes / 4 + 4096) continue;
      if (best == blocks_.size() || b.bytes < blocks_[best].bytes) best = i;
    }
    if (best == blocks_.size()) return nullptr;
    void* p = blocks_[best].p;
    held_ -= blocks_[best].bytes;
    blocks_[best] = blocks_.back();
    blocks_.pop_back();
    return p;
  }

  // Whether a block of `bytes` would be kept now (the caller skips its wait for the device else).
  bool has_room(std::size_t bytes) const { return bytes <= max_block_ && held_ + bytes <= max_total_; }

  // Keeps the block (true) when it is small enough and there is room; false: the caller frees it.
  bool keep(const CachedBlock& b) {
    if (b.p == nullptr || !has_room(b.bytes)) return false;
    blocks_.push_back(b);
    held_ += b.bytes;
    return true;
  }

  // Every kept block of `device` (of every device when device < 0), removed: the caller frees them.
  std::vector<CachedBlock> drain(int device = -1) {
    std::vector<CachedBlock> out, stay;
    for (const auto& b : blocks_) (device < 0 || b.device == device ? out : stay).push_back(b);
    blocks_ = std::move(stay);
    held_ = 0;
    for (const auto& b : blocks_) held_ += b.bytes;
    return out;
  }

  std::size_t bytes() const { return held_; }

 private:
  std::size_t max_block_, max_total_;
  std::size_t held_{0};
  std::vector<CachedBlock> blocks_;
};

}  // namespace tandem::gpu
