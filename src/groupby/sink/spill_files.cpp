#include "groupby/sink/spill_files.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"

namespace tandem::sink {
namespace {

struct BlockHeader {
  std::uint64_t chunk;
  std::uint64_t bytes;
};

}  // namespace

std::string temporary_directory(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("TMPDIR");
  return env != nullptr && *env != '\0' ? env : "/tmp";
}

SpillFiles::SpillFiles(const std::string& parent, std::size_t files) {
  std::string name = parent + "/tandem-groupby-XXXXXX";
  if (::mkdtemp(name.data()) == nullptr)
    throw UsageError(fmt::format("group-by spill: cannot make a folder in '{}' ({})", parent, std::strerror(errno)));
  folder_ = name;
  slot_ = io::register_temporary_folder(folder_, static_cast<int>(files));
  for (std::size_t f = 0; f < files; ++f) files_.push_back(std::make_unique<File>());
}

SpillFiles::~SpillFiles() {
  for (std::size_t f = 0; f < files_.size(); ++f) {
    if (files_[f]->handle != nullptr) std::fclose(files_[f]->handle);
    ::unlink(path(f).c_str());
  }
  ::rmdir(folder_.c_str());
  io::release_temporary_folder(slot_);
}

std::string SpillFiles::path(std::size_t f) const { return fmt::format("{}/{}", folder_, f); }

void SpillFiles::append(std::size_t f, std::uint64_t chunk, const std::byte* data, std::size_t bytes) {
  File& file = *files_.at(f);
  const std::lock_guard hold(file.lock);
  if (file.handle == nullptr) {
    file.handle = std::fopen(path(f).c_str(), "w+b");
    if (file.handle == nullptr)
      throw Error(fmt::format("group-by spill: cannot create '{}' ({})", path(f), std::strerror(errno)));
  }
  const BlockHeader h{chunk, bytes};
  if (std::fwrite(&h, sizeof h, 1, file.handle) != 1 ||
      (bytes > 0 && std::fwrite(data, 1, bytes, file.handle) != bytes))
    throw Error(fmt::format("group-by spill: writing '{}' failed ({})", path(f), std::strerror(errno)));
  file.bytes += sizeof h + bytes;
  written_ += sizeof h + bytes;
}

std::vector<SpillFiles::Block> SpillFiles::read(std::size_t f) {
  File& file = *files_.at(f);
  const std::lock_guard hold(file.lock);
  std::vector<Block> blocks;
  if (file.handle == nullptr) return blocks;
  // One buffer for the whole file (block sizes are multiples of 8, so every block stays aligned).
  std::shared_ptr<std::byte> all(new std::byte[file.bytes], std::default_delete<std::byte[]>());
  if (std::fflush(file.handle) != 0 || std::fseek(file.handle, 0, SEEK_SET) != 0 ||
      std::fread(all.get(), 1, file.bytes, file.handle) != file.bytes)
    throw Error(fmt::format("group-by spill: reading '{}' back failed ({})", path(f), std::strerror(errno)));
  std::fseek(file.handle, 0, SEEK_END);
  for (std::size_t at = 0; at < file.bytes;) {
    BlockHeader h;
    std::memcpy(&h, all.get() + at, sizeof h);
    at += sizeof h;
    if (h.bytes > file.bytes - at) throw Error(fmt::format("group-by spill: '{}' is cut short", path(f)));
    blocks.push_back({h.chunk, std::shared_ptr<std::byte>(all, all.get() + at), h.bytes});
    at += h.bytes;
  }
  std::stable_sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.chunk < b.chunk; });
  return blocks;
}

SpillFiles::Block SpillFiles::read_block(std::size_t f, std::uint64_t& at) {
  File& file = *files_.at(f);
  const std::lock_guard hold(file.lock);
  BlockHeader h{};
  if (std::fflush(file.handle) != 0 || std::fseek(file.handle, static_cast<long>(at), SEEK_SET) != 0 ||
      std::fread(&h, sizeof h, 1, file.handle) != 1)
    throw Error(fmt::format("group-by spill: reading '{}' back failed ({})", path(f), std::strerror(errno)));
  if (h.bytes > file.bytes - at - sizeof h) throw Error(fmt::format("group-by spill: '{}' is cut short", path(f)));
  std::shared_ptr<std::byte> bytes(new std::byte[std::max<std::uint64_t>(h.bytes, 1)],
                                   std::default_delete<std::byte[]>());
  if (h.bytes > 0 && std::fread(bytes.get(), 1, h.bytes, file.handle) != h.bytes)
    throw Error(fmt::format("group-by spill: reading '{}' back failed ({})", path(f), std::strerror(errno)));
  std::fseek(file.handle, 0, SEEK_END);
  at += sizeof h + h.bytes;
  return {h.chunk, std::move(bytes), h.bytes};
}

void SpillFiles::remove(std::size_t f) {
  File& file = *files_.at(f);
  const std::lock_guard hold(file.lock);
  if (file.handle != nullptr) std::fclose(file.handle);
  file.handle = nullptr;
  file.bytes = 0;
  ::unlink(path(f).c_str());
}

}  // namespace tandem::sink
