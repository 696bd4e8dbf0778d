// The memory the exchange receives into, kept between operations. A fresh buffer costs a page
// fault per 4 KiB page, and measured more than MPI's copy into it (bench_dist_sort's "exchange
// buffer" stage against "exchange data"). So buffers of 2 MiB and more are 2 MiB aligned with
// huge pages asked for (512 times fewer faults where the kernel grants them), faulted in on the
// rank's threads when fresh, and given back to the Context afterwards, which keeps them, up to a
// bound, for the next exchange: that one then writes to warm memory, as the MPI floor does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::dist {

// Host memory with every page faulted in: 2 MiB aligned with huge pages asked for from 2 MiB
// up, plain malloc below. Move-only.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(std::uint64_t bytes, int threads);  // faults the pages in on `threads` threads
  HostBuffer(HostBuffer&& o) noexcept;
  HostBuffer& operator=(HostBuffer&& o) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer();
  std::byte* data() const noexcept { return data_; }
  std::uint64_t size() const noexcept { return size_; }  // at least the bytes asked for

 private:
  std::byte* data_{nullptr};
  std::uint64_t size_{0};
};

class ReceiveBuffers;

// A buffer taken from ReceiveBuffers; handed back to it when the lease ends. Move-only.
class BufferLease {
 public:
  BufferLease() = default;
  BufferLease(ReceiveBuffers* owner, HostBuffer buffer) : owner_(owner), buffer_(std::move(buffer)) {}
  BufferLease(BufferLease&& o) noexcept : owner_(o.owner_), buffer_(std::move(o.buffer_)) { o.owner_ = nullptr; }
  BufferLease& operator=(BufferLease&& o) noexcept;
  BufferLease(const BufferLease&) = delete;
  BufferLease& operator=(const BufferLease&) = delete;
  ~BufferLease() { give_back(); }
  std::byte* data() const noexcept { return buffer_.data(); }

 private:
  void give_back() noexcept;
  ReceiveBuffers* owner_{nullptr};
  HostBuffer buffer_;
};

// The buffers kept between exchanges: never more than keep_bytes in all (0: none kept; every
// exchange then receives into fresh memory).
class ReceiveBuffers {
 public:
  explicit ReceiveBuffers(std::uint64_t keep_bytes = 0) : keep_(keep_bytes) {}
  // At least `bytes`: the smallest kept buffer that is large enough, else a fresh one (kept
  // buffers smaller than `bytes` are freed first: they would be the first to go on its return).
  BufferLease take(std::uint64_t bytes, int threads);
  // Keeps the buffer, freeing the longest-kept ones while more than keep_bytes are kept.
  void keep(HostBuffer buffer) noexcept;
  void release() noexcept { kept_.clear(); }  // frees every kept buffer
  std::uint64_t kept_bytes() const noexcept;

 private:
  std::uint64_t keep_;
  std::vector<HostBuffer> kept_;  // oldest first
};

}  // namespace tandem::dist
