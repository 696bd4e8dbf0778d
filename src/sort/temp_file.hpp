// One scratch file of a sort by runs, in a private folder (mkdtemp) under the temporary
// directory. The folder is registered with io::remove_temporaries() so that the CLI's
// SIGINT/SIGTERM handler removes it, and the destructor removes it on every other path (errors
// included). Reads and writes are whole: a short count is retried, a failure is an Error naming
// the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::detail {

// $TMPDIR, else /tmp, when `given` is empty.
std::string temp_parent(const std::string& given);

class TempFile {
 public:
  // UsageError naming the directory when the folder cannot be made in it.
  explicit TempFile(const std::string& parent);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write_at(const void* data, std::uint64_t bytes, std::uint64_t offset);
  void read_at(void* data, std::uint64_t bytes, std::uint64_t offset) const;
  void truncate();  // empties the file
  const std::string& folder() const { return folder_; }
  const std::string& name() const { return file_; }

 private:
  std::string folder_, file_;
  int fd_{-1};
  int slot_{-1};
};

}  // namespace tandem::detail
