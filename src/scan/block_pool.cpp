// Memory blocks for a scan's chunk columns. A chunk's columns usually live only until the
// group-by has taken them in, and the next chunk needs blocks of the same sizes: blocks of 1 MiB
// and more go back to a small pool (at most kPoolBytes) instead of to the system, so that after
// the first chunks the scan writes into memory that is already mapped (no page faults).
#include <mutex>
#include <vector>

#include "scan/column_out.hpp"
#include "tandem/core/detail/huge_pages.hpp"

namespace tandem::scan {
namespace {

constexpr std::size_t kLarge = std::size_t{1} << 20;
constexpr std::size_t kPoolBytes = std::size_t{128} << 20;

struct Pool {
  std::mutex m;
  std::vector<std::pair<std::size_t, std::byte*>> free;  // (bytes, block)
  std::size_t bytes{0};
  ~Pool() {
    for (auto& [n, p] : free) detail::free_huge_pages(p);
  }
};

Pool& pool() {
  static Pool p;
  return p;
}

void give_back(std::byte* p, std::size_t bytes) {
  Pool& pl = pool();
  {
    std::lock_guard lock(pl.m);
    if (pl.bytes + bytes <= kPoolBytes) {
      pl.free.emplace_back(bytes, p);
      pl.bytes += bytes;
      return;
    }
  }
  detail::free_huge_pages(p);
}

}  // namespace

std::shared_ptr<std::byte> RawArray::block(std::size_t bytes) {
  if (bytes < kLarge)
    return std::shared_ptr<std::byte>(new std::byte[bytes ? bytes : 1], std::default_delete<std::byte[]>());
  bytes = detail::huge_page_bytes(bytes);
  std::byte* p = nullptr;
  {
    Pool& pl = pool();
    std::lock_guard lock(pl.m);
    for (std::size_t i = 0; i < pl.free.size(); ++i)
      if (pl.free[i].first == bytes) {
        p = pl.free[i].second;
        pl.bytes -= bytes;
        pl.free[i] = pl.free.back();
        pl.free.pop_back();
        break;
      }
  }
  if (!p) p = static_cast<std::byte*>(detail::allocate_huge_pages(bytes));
  return std::shared_ptr<std::byte>(p, [bytes](std::byte* q) { give_back(q, bytes); });
}

}  // namespace tandem::scan
