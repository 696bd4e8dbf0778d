// Where a streaming scan's bytes come from, read in pieces into the caller's buffers (no
// mapping, no trust in the file's size): a file, standard input or a pipe ("-", a FIFO: one
// pass), a gzip file (.gz, zlib) or a Zstandard file (.zst, libzstd), each decompressed as it
// streams. A compressed file whose library was not built in is an InputError saying so.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace tandem::scan {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Up to n bytes into dst; 0 at the end. InputError naming the source on a read error.
  virtual std::size_t read(char* dst, std::size_t n) = 0;
  // Reads n bytes or up to the end; returns how many.
  std::size_t read_full(char* dst, std::size_t n);
  // The same, a regular file's bytes copied by up to `parts` threads at once (the page cache's
  // copy on one thread, some 6 GB/s, is what caps a scan on many cores); other sources read as
  // read_full does.
  virtual std::size_t read_full_in_parts(char* dst, std::size_t n, int parts);
  // Whether a second pass may open the same path again (a regular file, compressed or not).
  bool rewindable{false};
  bool compressed{false};
  std::string name;  // for messages: the path, or <stdin>
};

// Opens `path` ("-": standard input); the suffix picks the decompressor.
std::unique_ptr<ByteSource> open_source(const std::string& path);

// Whether open_source decompresses `path` (its suffix: .gz or .zst).
bool is_compressed(const std::string& path);

}  // namespace tandem::scan
