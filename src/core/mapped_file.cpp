// Array files mapped read-only (io::map_array): the page cache's own pages instead of a fresh
// buffer, which the kernel would zero page by page before a read could fill it.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "tandem/core/detail/io_pieces.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14; older C libraries lack the name
#endif

namespace tandem::io::detail {
namespace {

constexpr std::size_t kTouchStride = 4096;  // the smallest page: one read per page faults every page in

// Fills the page tables of [p, p + n) (page-aligned p) from the page cache, reading the file where
// a page is not cached. Returns 0 or the errno of the failure.
int populate(const std::byte* p, std::size_t n) {
  for (;;) {
    if (::madvise(const_cast<std::byte*>(p), n, MADV_POPULATE_READ) == 0) return 0;
    if (errno == EINTR || errno == EAGAIN) continue;
    if (errno != EINVAL) return errno;
    break;
  }
  // A kernel before 5.14: a read of every page faults it in the same way, one fault at a time.
  const volatile std::byte* v = p;
  for (std::size_t i = 0; i < n; i += kTouchStride) (void)v[i];
  return 0;
}

}  // namespace

std::shared_ptr<const std::byte> map_file(int fd, const std::string& name, std::uint64_t size, std::uint64_t from,
                                          int threads) {
  if (size == 0 || from > size) return nullptr;
  void* base = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (base == MAP_FAILED) return nullptr;  // a file system without mmap, or no address space left
  const auto len = static_cast<std::size_t>(size);
  std::shared_ptr<const std::byte> mapping(static_cast<const std::byte*>(base),
                                           [len](const std::byte* p) { ::munmap(const_cast<std::byte*>(p), len); });
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t first = static_cast<std::size_t>(from) / page * page;
  const std::byte* at = mapping.get() + first;
  const IoPieces plan(len - first, threads > 0 ? threads : default_threads());  // page-multiple pieces
  std::atomic<int> failed_errno{0};
  std::atomic<std::size_t> failed_at{0};
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1) if (plan.threads > 1)
  for (std::size_t i = 0; i < plan.count; ++i) {
    if (failed_errno.load(std::memory_order_relaxed) != 0) continue;
    if (const int err = populate(at + plan.begin(i), plan.end(i) - plan.begin(i))) {
      int none = 0;
      if (failed_errno.compare_exchange_strong(none, err)) failed_at = first + plan.begin(i);
    }
  }
  if (const int err = failed_errno.load())  // EFAULT: the file shrank since it was opened, or a read failed
    throw InputError(fmt::format("{}: read failed at or after byte {} ({})", name, failed_at.load(),
                                 err == EFAULT ? "the file ended early or could not be read" : std::strerror(err)));
  return mapping;
}

}  // namespace tandem::io::detail
