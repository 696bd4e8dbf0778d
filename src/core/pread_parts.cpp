#include "core/pread_parts.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>

#include <fmt/format.h>

#include "tandem/core/detail/io_pieces.hpp"
#include "tandem/core/error.hpp"

namespace tandem::io {

PreadPool::PreadPool(int helpers) {
  try {
    for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { serve(); });
  } catch (...) {
    stop();  // the helpers already started
    throw;
  }
}

PreadPool::~PreadPool() { stop(); }

void PreadPool::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void PreadPool::serve() {
  std::uint64_t joined = 0;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || (open_ > 0 && call_ != joined); });
    if (stop_) return;
    joined = call_;
    --open_;
    ++busy_;
    const auto& job = *job_;
    lock.unlock();
    job();
    lock.lock();
    if (--busy_ == 0) done_.notify_one();
  }
}

void PreadPool::run(int helpers, const std::function<void()>& job) {
  helpers = std::clamp(helpers, 0, this->helpers());
  {
    std::lock_guard lock(mutex_);
    job_ = &job;
    open_ = helpers;
    ++call_;
  }
  if (helpers > 0) wake_.notify_all();
  job();
  std::unique_lock lock(mutex_);
  open_ = 0;  // a helper not awake yet would find nothing left to do: not waited for
  done_.wait(lock, [&] { return busy_ == 0; });
}

std::size_t pread_some(const PreadFile& f, void* dst, std::size_t n, std::uint64_t at) {
  n = std::min(n, detail::kMaxIo);
  for (;;) {
    const ssize_t got = ::pread(f.fd, dst, n, static_cast<off_t>(f.origin + at));
    if (got >= 0) return static_cast<std::size_t>(got);
    // Some /proc files refuse a large count with ENOMEM (the kernel's buffer is the size asked).
    if (errno == ENOMEM && n > 4096) {
      n /= 2;
      continue;
    }
    if (errno != EINTR)
      throw InputError(fmt::format("{}: read failed at byte {} ({})", f.name, at, std::strerror(errno)));
  }
}

namespace {

// One call's pieces, taken in turn by whichever thread is free (a thread that loses its core
// delays one piece, not a share); the first error stops the others.
class PieceReads {
 public:
  PieceReads(const PreadFile& f, char* dst, std::size_t n, std::uint64_t at, int threads)
      : f_(f), dst_(dst), at_(at), plan_(n, threads), end_(n) {}

  int threads() const { return plan_.threads; }

  // Run by every thread of the call; never throws (the error is kept for the caller).
  void work() noexcept {
    try {
      while (!failed_.load(std::memory_order_relaxed)) {
        const std::size_t i = next_++;
        if (i >= plan_.count) break;
        read(i);
      }
    } catch (...) {
      std::lock_guard lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      failed_ = true;
    }
  }

  std::size_t result() const {
    if (error_) std::rethrow_exception(error_);
    return end_.load();
  }

 private:
  void read(std::size_t i) {
    const std::size_t hi = plan_.end(i);
    for (std::size_t have = plan_.begin(i); have < hi && !failed_.load(std::memory_order_relaxed);) {
      const std::size_t got = pread_some(f_, dst_ + have, hi - have, at_ + have);
      if (got == 0) {  // the file ended here: the result is the earliest such end
        std::size_t e = end_.load();
        while (have < e && !end_.compare_exchange_weak(e, have)) {}
        return;
      }
      have += got;
    }
  }

  const PreadFile& f_;
  char* dst_;
  std::uint64_t at_;
  detail::IoPieces plan_;
  std::atomic<std::size_t> next_{0}, end_;
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace

std::size_t pread_parts(const PreadFile& f, void* dst, std::size_t n, std::uint64_t at, int threads, PreadPool* pool) {
  PieceReads reads(f, static_cast<char*>(dst), n, at, threads);
  if (reads.threads() <= 1) {
    reads.work();
  } else if (pool) {
    pool->run(reads.threads() - 1, [&] { reads.work(); });
  } else {
#pragma omp parallel num_threads(reads.threads())
    reads.work();
  }
  return reads.result();
}

}  // namespace tandem::io
