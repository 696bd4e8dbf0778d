#include "groupby/sink/piece_arena.hpp"

#include "core/scratch_pool.hpp"

namespace tandem::sink {
namespace {

// From the scratch pool: once the copies are joined, their pages serve the combine's arrays.
std::shared_ptr<std::byte> huge_block(std::size_t bytes) {
  const std::size_t size = scratch_class(bytes);
  return {static_cast<std::byte*>(take_scratch(size)), [size](std::byte* p) { give_scratch(p, size); }};
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
