#include "groupby/sink/piece_arena.hpp"

#include "tandem/core/detail/huge_pages.hpp"

namespace tandem::sink {
namespace {

std::shared_ptr<std::byte> huge_block(std::size_t bytes) {
  return {static_cast<std::byte*>(detail::allocate_huge_pages(bytes)),
          [](std::byte* p) { detail::free_huge_pages(p); }};
}

}  // namespace

PieceArena::Room PieceArena::take(std::size_t bytes) {
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded > kBlock / 4) {  // a large copy takes a block of its own
    auto own = huge_block(rounded);
    return {own.get(), own};
  }
  const std::lock_guard hold(lock_);
  if (!block_ || used_ + rounded > kBlock) {
    block_ = huge_block(kBlock);
    used_ = 0;
  }
  std::byte* at = block_.get() + used_;
  used_ += rounded;
  return {at, block_};
}

}  // namespace tandem::sink
