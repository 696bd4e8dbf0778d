// Room for the group-by sink's owned copies of chunk columns (each mostly-distinct chunk's
// one-row partial groups, the kept rows of holistic aggregations), packed into 32 MiB blocks on
// huge pages. Those copies are 1-2 MiB a column for an 8 MiB chunk, which malloc serves from
// fresh 4 KiB pages: one page fault per 4 KiB on first touch, and on a virtual machine tens of
// microseconds each (q10 at 10^7 rows: some 2.6·10^5 faults, 4-8 s of system time). A block goes
// back to the scratch pool when the last column in it does. Thread-safe.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>

#include "tandem/table.hpp"

namespace tandem::sink {

class PieceArena {
 public:
  // `bytes` of uninitialised room, 64-byte aligned, and what keeps it alive.
  struct Room {
    std::byte* data;
    std::shared_ptr<const void> owner;
  };
  Room take(std::size_t bytes);

 private:
  static constexpr std::size_t kBlock = std::size_t{32} << 20;
  std::mutex lock_;
  std::shared_ptr<std::byte> block_;  // the block being filled
  std::size_t used_{0};
};

// n elements of T written by fill(T*), in the arena's room (a vector of their own without one).
template <class T, class Fill>
Buffer filled_buffer(PieceArena* arena, std::size_t n, Fill&& fill) {
  if (arena == nullptr || n == 0) {
    std::vector<T> v(n);
    fill(v.data());
    return Buffer::take(std::move(v));
  }
  PieceArena::Room room = arena->take(n * sizeof(T));
  fill(reinterpret_cast<T*>(room.data));
  return Buffer::borrow(room.data, n * sizeof(T), std::move(room.owner));
}

}  // namespace tandem::sink
