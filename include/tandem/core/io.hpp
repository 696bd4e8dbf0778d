// Array files (raw little-endian or .npy) and output files that never stay half written.
#pragma once
#include <cstddef>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "tandem/core/types.hpp"

namespace tandem::io {

// An array read from a file: its bytes and element type.
struct Array {
  DType dtype{DType::u8};
  std::size_t count{0};
  std::vector<std::byte> bytes;

  template <class T>
  std::span<T> as() {
    return {reinterpret_cast<T*>(bytes.data()), count};
  }
};

// Reads `path` ("-" for standard input). A name ending in .npy is parsed as NumPy's format and
// its dtype must equal `dtype`; otherwise the file is raw little-endian elements of `dtype`.
// Throws InputError naming the file and the problem (missing, size not a multiple of the element
// size, dtype mismatch, bad header, not one-dimensional).
Array read_array(const std::string& path, DType dtype);

template <class T>
std::vector<T> read_vector(const std::string& path) {
  Array a = read_array(path, dtype_of<T>());
  auto s = a.as<T>();
  return {s.begin(), s.end()};
}

// Reads a whole file (or standard input for "-") as bytes; InputError if it cannot be read.
std::vector<char> read_bytes(const std::string& path);

// Writes `count` elements to `path` ("-" for standard output): .npy when the name ends in .npy,
// raw little-endian otherwise. The file appears only when it is complete.
void write_array(const std::string& path, DType dtype, const void* data, std::size_t count);

template <class T>
void write_vector(const std::string& path, std::span<const T> v) {
  write_array(path, dtype_of<T>(), v.data(), v.size());
}

bool has_npy_suffix(const std::string& path);

// An output file written to a temporary name beside the target and renamed over it by commit().
// Destroyed without commit(), it removes the temporary: a failed run leaves no partial file.
// Path "-" writes straight to standard output.
class AtomicOutput {
 public:
  explicit AtomicOutput(std::string path);  // throws InputError if the directory is unwritable
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  std::ostream& stream();
  void commit();  // flushes, checks for write errors, renames into place

 private:
  std::string path_;
  std::string temp_;
  std::ofstream file_;
  bool to_stdout_{false};
  bool committed_{false};
};

}  // namespace tandem::io
