// How a file read or write of `bytes` is split over threads (io.cpp, atomic_output.cpp): pieces
// of at least 1 MiB (fewer system calls and no thread team for small files), about four per
// thread, handed out dynamically so that a thread that loses its core delays one piece, not a
// whole share.
#pragma once
#include <algorithm>
#include <cstddef>

namespace tandem::io::detail {

constexpr std::size_t kMinIoPiece = std::size_t{1} << 20;
constexpr std::size_t kMaxIo = std::size_t{1} << 30;  // the most one read/write call is asked for

struct IoPieces {
  // threads: the threads that may work (>= 1).
  IoPieces(std::size_t total, int threads) : bytes(total) {
    const std::size_t wanted = static_cast<std::size_t>(std::max(1, threads)) * 4;
    piece = std::max(kMinIoPiece, ((bytes + wanted - 1) / wanted + 4095) & ~std::size_t{4095});
    count = (bytes + piece - 1) / piece;
    this->threads = static_cast<int>(std::clamp<std::size_t>(count, 1, static_cast<std::size_t>(std::max(1, threads))));
  }
  std::size_t begin(std::size_t i) const { return i * piece; }
  std::size_t end(std::size_t i) const { return std::min(bytes, (i + 1) * piece); }

  std::size_t bytes;
  std::size_t piece{0};  // every piece but the last is this long
  std::size_t count{0};  // 0 for no bytes
  int threads{1};        // never more than the pieces
};

}  // namespace tandem::io::detail
