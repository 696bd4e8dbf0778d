// Several files read as one text with a newline after each but the last (so that no word spans
// two files): which file bytes and which newlines make up any range of that text. Pure: the GPU
// word count fills its upload slots from it, and tests check it on the CPU.
#pragma once
#include <cstdint>
#include <vector>

namespace tandem::mapreduce::detail {

class JoinedFiles {
 public:
  explicit JoinedFiles(const std::vector<std::uint64_t>& sizes) : sizes_(sizes) {
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      if (i) ++size_;
      starts_.push_back(size_);
      size_ += sizes_[i];
    }
  }

  std::uint64_t size() const { return size_; }

  // Bytes [off, off + len) of the joined text: piece(file, at_in_file, at_in_range, bytes) for
  // each part of a file in it, newline(at_in_range) for each newline between files, in order.
  template <class Piece, class Newline>
  void split(std::uint64_t off, std::uint64_t len, Piece&& piece, Newline&& newline) const {
    const std::uint64_t end = off + len;
    for (std::size_t i = 0; i < sizes_.size(); ++i) {
      const std::uint64_t fb = starts_[i], fe = fb + sizes_[i];
      if (i && fb - 1 >= off && fb - 1 < end) newline(fb - 1 - off);
      const std::uint64_t lo = fb > off ? fb : off, hi = fe < end ? fe : end;
      if (lo < hi) piece(i, lo - fb, lo - off, hi - lo);
    }
  }

 private:
  std::vector<std::uint64_t> sizes_;
  std::vector<std::uint64_t> starts_;  // where each file begins in the joined text
  std::uint64_t size_{0};
};

}  // namespace tandem::mapreduce::detail
