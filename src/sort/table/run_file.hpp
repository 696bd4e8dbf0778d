// Sorted runs of a table sort that does not fit in memory: one scratch file (temp_file.hpp), each
// run a list of blocks (narrow images of run_block.hpp, written straight from the unsorted piece
// in its sorted row order). Runs are read back a block at a time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "sort/temp_file.hpp"
#include "tandem/table.hpp"

namespace tandem::detail {

class RunFile {
 public:
  // UsageError naming the directory when the folder cannot be made in it.
  explicit RunFile(const std::string& parent) : file_(parent) {}

  // Appends a run: t's rows in the order `rows`, in blocks of at most block_rows rows. Error
  // naming the file when a write fails (a full disk).
  void add_run(const Table& t, std::span<const std::size_t> rows, std::size_t block_rows, int threads);
  void clear();  // drops every run (the input is read again with other column types)
  std::size_t runs() const { return runs_.size(); }
  std::uint64_t bytes_written() const { return written_; }
  const std::string& folder() const { return file_.folder(); }

  // Run r's block b (blocks(r) of them), its numbers lent from one buffer; `like` names the
  // columns and types.
  std::size_t blocks(std::size_t r) const { return runs_.at(r).size(); }
  Table read_block(std::size_t r, std::size_t b, const Table& like) const;

 private:
  struct Block {
    std::uint64_t offset, bytes;
  };
  TempFile file_;
  std::uint64_t size_{0}, written_{0};
  std::vector<std::vector<Block>> runs_;
};

}  // namespace tandem::detail
