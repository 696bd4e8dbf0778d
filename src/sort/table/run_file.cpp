#include "run_file.hpp"

#include <algorithm>
#include <memory>

#include "run_block.hpp"

namespace tandem::detail {

void RunFile::add_run(const Table& t, std::span<const std::size_t> rows, std::size_t block_rows, int threads) {
  block_rows = std::max<std::size_t>(block_rows, 1);
  const auto codings = plan_codings(t, threads);
  std::vector<Block> blocks;
  // A few blocks' images at a time: the writing costs no more memory than a few blocks.
  constexpr std::size_t kBlocksPerWrite = 4;
  for (std::size_t first = 0; first < rows.size(); first += block_rows * kBlocksPerWrite) {
    const std::size_t last = std::min(rows.size(), first + block_rows * kBlocksPerWrite);
    std::vector<std::size_t> starts;
    for (std::size_t s = first; s < last; s += block_rows) starts.push_back(s - first);
    starts.push_back(last - first);
    const auto images = encode_blocks(t, codings, rows.subspan(first, last - first), starts, threads);
    std::uint64_t total = 0;
    for (const auto s : images.sizes) blocks.push_back({size_ + total, s}), total += s;
    file_.write_at(images.bytes.data(), total, size_);
    size_ += total;
    written_ += total;
  }
  runs_.push_back(std::move(blocks));
}

void RunFile::clear() {
  runs_.clear();
  size_ = 0;
  file_.truncate();
}

Table RunFile::read_block(std::size_t r, std::size_t b, const Table& like) const {
  const Block& k = runs_.at(r).at(b);
  std::shared_ptr<std::byte> bytes(new std::byte[std::max<std::uint64_t>(k.bytes, 1)],
                                   std::default_delete<std::byte[]>());
  file_.read_at(bytes.get(), k.bytes, k.offset);
  return decode_block(std::shared_ptr<const std::byte>(bytes), k.bytes, like);
}

}  // namespace tandem::detail
