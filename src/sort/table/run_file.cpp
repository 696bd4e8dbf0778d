#include "run_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "run_block.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"

namespace tandem::detail {

std::string temp_parent(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("TMPDIR");
  return env != nullptr && *env != '\0' ? env : "/tmp";
}

RunFile::RunFile(const std::string& parent) {
  std::string name = parent + "/tandem-sort-XXXXXX";
  if (::mkdtemp(name.data()) == nullptr)
    throw UsageError(fmt::format("sorting by runs: cannot make a folder in '{}' ({})", parent, std::strerror(errno)));
  folder_ = name;
  slot_ = io::register_temporary_folder(folder_, 1);
  file_ = folder_ + "/0";
  fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    const int err = errno;
    ::rmdir(folder_.c_str());
    io::release_temporary_folder(slot_);
    throw Error(fmt::format("sorting by runs: cannot create '{}' ({})", file_, std::strerror(err)));
  }
}

RunFile::~RunFile() {
  ::close(fd_);
  ::unlink(file_.c_str());
  ::rmdir(folder_.c_str());
  io::release_temporary_folder(slot_);
}

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
    for (std::uint64_t at = 0; at < total;) {
      const ssize_t n = ::pwrite(fd_, images.bytes.data() + at, total - at, static_cast<off_t>(size_ + at));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(fmt::format("sorting by runs: writing '{}' failed ({})", file_, std::strerror(errno)));
      at += static_cast<std::uint64_t>(n);
    }
    size_ += total;
    written_ += total;
  }
  runs_.push_back(std::move(blocks));
}

void RunFile::clear() {
  runs_.clear();
  size_ = 0;
  if (::ftruncate(fd_, 0) != 0)
    throw Error(fmt::format("sorting by runs: cannot truncate '{}' ({})", file_, std::strerror(errno)));
}

Table RunFile::read_block(std::size_t r, std::size_t b, const Table& like) const {
  const Block& k = runs_.at(r).at(b);
  std::shared_ptr<std::byte> bytes(new std::byte[std::max<std::uint64_t>(k.bytes, 1)],
                                   std::default_delete<std::byte[]>());
  for (std::uint64_t at = 0; at < k.bytes;) {
    const ssize_t n = ::pread(fd_, bytes.get() + at, k.bytes - at, static_cast<off_t>(k.offset + at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(fmt::format("sorting by runs: reading '{}' back failed ({})", file_, std::strerror(errno)));
    at += static_cast<std::uint64_t>(n);
  }
  return decode_block(std::shared_ptr<const std::byte>(bytes), k.bytes, like);
}

}  // namespace tandem::detail
