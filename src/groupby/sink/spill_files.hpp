// The group-by sink's spill folder: a private folder (mkdtemp) under the temporary directory
// holding a fixed number of files named 0, 1, …, each a sequence of blocks (a chunk index, a byte
// count and that many bytes: table images of table/table_wire.hpp). The folder is registered with
// io::remove_temporaries() so that a SIGINT/SIGTERM handler removes it, and the destructor
// removes it on every other path. Appending is linear in the bytes written; reading a file
// returns its blocks in chunk order; a file can also be read a block at a time (in the order
// written) and removed once read.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tandem::sink {

// $TMPDIR, else /tmp, when `given` is empty.
std::string temporary_directory(const std::string& given);

class SpillFiles {
 public:
  // UsageError naming the directory when the folder cannot be made in it.
  SpillFiles(const std::string& parent, std::size_t files);
  ~SpillFiles();
  SpillFiles(const SpillFiles&) = delete;
  SpillFiles& operator=(const SpillFiles&) = delete;

  const std::string& folder() const { return folder_; }
  // Appends one block to file f. Thread-safe (one lock per file). Error naming the file when a
  // write fails (a full disk).
  void append(std::size_t f, std::uint64_t chunk, const std::byte* data, std::size_t bytes);
  struct Block {
    std::uint64_t chunk;
    std::shared_ptr<std::byte> bytes;
    std::size_t size;
  };
  // File f's blocks, sorted by chunk (stable). Error naming the file when it cannot be read back.
  std::vector<Block> read(std::size_t f);
  // Each of file f's blocks in the order written, one in memory at a time.
  template <class F>
  void for_each_block(std::size_t f, F&& visit) {
    for (std::uint64_t at = 0; at < bytes(f);) visit(read_block(f, at));
  }
  std::uint64_t bytes(std::size_t f) const { return files_.at(f)->bytes; }  // once appending is over
  // Closes and deletes file f (its disk space back once it is read); it reads as empty after.
  void remove(std::size_t f);
  std::uint64_t bytes_written() const { return written_; }

 private:
  std::string path(std::size_t f) const;
  Block read_block(std::size_t f, std::uint64_t& at);  // the block at byte `at`; `at` moves past it
  std::string folder_;
  int slot_{-1};
  struct File {
    std::mutex lock;
    std::FILE* handle{nullptr};
    std::uint64_t bytes{0};
  };
  std::vector<std::unique_ptr<File>> files_;
  std::atomic<std::uint64_t> written_{0};
};

}  // namespace tandem::sink
