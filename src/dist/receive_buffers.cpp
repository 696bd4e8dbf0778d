#include "dist/receive_buffers.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <utility>

#include "tandem/core/detail/huge_pages.hpp"

namespace tandem::dist {
namespace {
constexpr std::uint64_t kPage = 4096;
}  // namespace

HostBuffer::HostBuffer(std::uint64_t bytes, int threads) {
  if (bytes == 0) return;
  const bool huge = bytes >= detail::kHugePage;
  size_ = huge ? detail::huge_page_bytes(bytes) : bytes;
  void* p = huge ? detail::allocate_huge_pages(size_) : std::malloc(size_);
  if (!p) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(p);
  // One write per 4 KiB page, the pages split among the threads: the faults (and the kernel's
  // zeroing) go in parallel, not one by one inside MPI's copy.
  const auto pages = std::int64_t((size_ + kPage - 1) / kPage);
#pragma omp parallel for num_threads(std::max(threads, 1)) schedule(static)
  for (std::int64_t i = 0; i < pages; ++i) data_[std::uint64_t(i) * kPage] = std::byte{0};
}

HostBuffer::HostBuffer(HostBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

HostBuffer::~HostBuffer() { std::free(data_); }

BufferLease& BufferLease::operator=(BufferLease&& o) noexcept {
  if (this != &o) {
    give_back();
    owner_ = std::exchange(o.owner_, nullptr);
    buffer_ = std::move(o.buffer_);
  }
  return *this;
}

void BufferLease::give_back() noexcept {
  if (owner_ && buffer_.size()) owner_->keep(std::move(buffer_));
  buffer_ = HostBuffer();
  owner_ = nullptr;
}

BufferLease ReceiveBuffers::take(std::uint64_t bytes, int threads) {
  auto best = kept_.end();
  for (auto it = kept_.begin(); it != kept_.end(); ++it)
    if (it->size() >= bytes && (best == kept_.end() || it->size() < best->size())) best = it;
  if (best != kept_.end()) {
    HostBuffer b = std::move(*best);
    kept_.erase(best);
    return {this, std::move(b)};
  }
  std::erase_if(kept_, [&](const HostBuffer& b) { return b.size() < bytes; });
  return {this, HostBuffer(bytes, threads)};
}

void ReceiveBuffers::keep(HostBuffer buffer) noexcept {
  try {
    kept_.push_back(std::move(buffer));
  } catch (...) {  // no room to note it: the buffer is freed instead
    return;
  }
  while (!kept_.empty() && kept_bytes() > keep_) kept_.erase(kept_.begin());
}

std::uint64_t ReceiveBuffers::kept_bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& b : kept_) n += b.size();
  return n;
}

}  // namespace tandem::dist
