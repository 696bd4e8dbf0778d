// Array files (raw little-endian or .npy) and output files that never stay half written.
//
// Inputs may be regular files, standard input ("-"), pipes, FIFOs, character devices or /proc
// files: anything that is not a sized regular file is read by streaming until end of file.
// Every size taken from a file (a .npy shape, a header length) is checked before it is used.
#pragma once
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tandem/core/types.hpp"
#include "tandem/core/uninit_allocator.hpp"

namespace tandem {

// Host memory could not be allocated: a std::bad_alloc (the CLI's "out of memory", exit 1;
// Python's MemoryError) that names what was being allocated.
class HostMemoryError : public std::bad_alloc {
 public:
  explicit HostMemoryError(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

}  // namespace tandem

namespace tandem::io {

// UninitAllocator (uninit_allocator.hpp) under its older name.
using ::tandem::UninitAllocator;

using ByteBuffer = std::vector<std::byte, UninitAllocator<std::byte>>;
using CharBuffer = std::vector<char, UninitAllocator<char>>;

// An array read from a file: its bytes and element type.
struct Array {
  DType dtype{DType::u8};
  std::size_t count{0};
  ByteBuffer bytes;

  template <class T>
  std::span<T> as() {
    return {reinterpret_cast<T*>(bytes.data()), count};
  }
};

// Reads `path` ("-" for standard input). A name ending in .npy is parsed as NumPy's format and
// its dtype must equal `dtype`; otherwise the file is raw little-endian elements of `dtype`.
// The elements are read straight into the returned buffer: the peak memory is the data's size.
// A sized file is read in pieces on `threads` threads (0: default_threads()), a stream in order.
// Throws InputError naming the file and the problem (missing, size not a multiple of the element
// size, dtype mismatch, bad header with its byte offset, not one-dimensional, a shape whose byte
// count overflows), and Error naming the file when memory for it cannot be allocated.
Array read_array(const std::string& path, DType dtype, int threads = 0);

// An array file's elements for a consumer that only reads them (map_array).
struct MappedArray {
  DType dtype{DType::u8};
  std::size_t count{0};
  const std::byte* data{nullptr};
  std::shared_ptr<const void> owner;  // keeps `data` valid: the mapping, or the buffer read
  bool mapped{false};                 // true: the file's own pages; false: read into memory
  // Not mapped: the buffer the elements were read into (data points into it), which its holders
  // may write, e.g. to sort it in place instead of into new memory. Null when mapped.
  std::shared_ptr<Array> read_buffer;

  std::size_t bytes() const { return count * dtype_size(dtype); }
  template <class T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(data), count};
  }
};

// read_array for consumers that only read, in MappedArray's shape (its buffer as read_buffer).
// Files are read, never mapped: a mapped file that another process truncates raises SIGBUS
// wherever its pages are next touched, while a read of a file that shrinks ends where the file
// ended and the usual checks (element size, .npy length) report it. `mapped` is always false.
MappedArray map_array(const std::string& path, DType dtype, int threads = 0);

// An array read into memory in map_array's shape: the result keeps its buffer alive and names it
// as its read_buffer.
MappedArray holding(Array a);

// The element type a .npy file's header names ('<u4': u32, ...), from its header alone;
// InputError naming the file when it is no valid .npy file or its type is none tandem reads.
DType npy_dtype(const std::string& path);

template <class T>
std::vector<T> read_vector(const std::string& path) {
  Array a = read_array(path, dtype_of<T>());
  auto s = a.as<T>();
  return {s.begin(), s.end()};
}

// Part `part` of `parts` of an array file: its elements [count * part / parts,
// count * (part + 1) / parts), read at their offset (ranks sharing one file each read their own
// part). The file must be a sized regular file; the same checks as read_array. Read on
// default_threads() threads.
Array read_array_part(const std::string& path, DType dtype, std::size_t part, std::size_t parts);
// read_array_part for consumers that only read, in MappedArray's shape (read, as map_array reads).
MappedArray map_array_part(const std::string& path, DType dtype, std::size_t part, std::size_t parts, int threads = 0);

// Where an array file's elements lie: how many, and the offset of the first (past a .npy header).
// The same checks as read_array_part (a sized regular file, a whole number of elements).
struct ArrayExtent {
  std::uint64_t count{0}, data_offset{0};
};
ArrayExtent array_extent(const std::string& path, DType dtype);

// Bytes [begin, end) of a sized regular file; InputError naming it when it cannot be read.
CharBuffer read_bytes_range(const std::string& path, std::uint64_t begin, std::uint64_t end);

// A sized regular file read at any offset straight into memory the caller owns (a pinned staging
// buffer, say), without the whole file ever in one buffer. InputError naming the file when it
// cannot be opened, is not a sized regular file, or ends before a read.
class SizedFile {
 public:
  explicit SizedFile(const std::string& path);
  ~SizedFile();
  SizedFile(SizedFile&&) noexcept;
  SizedFile& operator=(SizedFile&&) noexcept;
  const std::string& name() const;
  std::uint64_t size() const;
  // Bytes [at, at + n) into dst, in pieces on `threads` threads (0: default_threads()).
  void read(void* dst, std::size_t n, std::uint64_t at, int threads = 0);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The size of a sized regular file (InputError for a stream, a missing file, a directory).
std::uint64_t file_size(const std::string& path);

// Reads a whole file (or standard input for "-") as bytes, a sized file on `threads` threads (0:
// default_threads()); InputError if it cannot be read, Error naming the file if memory for it
// cannot be allocated.
CharBuffer read_bytes(const std::string& path, int threads = 0);

// True when `path` names a regular file with a non-zero size (symbolic links followed): a size
// that can be trusted. Standard input, pipes, FIFOs, devices and /proc files (size 0) are not, and
// the readers here stream them to their end instead.
bool is_sized_file(const std::string& path);

// The fields of a .npy header dictionary, e.g. {'descr': '<u4', 'fortran_order': False, 'shape': (10,), }.
struct NpyHeader {
  std::string descr;
  bool fortran_order{false};
  std::vector<std::uint64_t> shape;
};

// Parses the dictionary text of a .npy header (the bytes after the length field). A hand-written
// single pass with no recursion: any bytes are safe to hand it. Throws InputError
// "<name>: not a valid .npy file: byte N: <problem>", N counted from `offset` (the dictionary's
// position in the file). Dimensions must be non-negative and fit in 64 bits.
NpyHeader parse_npy_header(std::string_view dict, const std::string& name, std::size_t offset = 0);

// Writes `count` elements to `path` ("-" for standard output): .npy when the name ends in .npy,
// raw little-endian otherwise. The file appears only when it is complete. The elements are written
// as AtomicOutput::write writes them, on `threads` threads (0: default_threads()).
void write_array(const std::string& path, DType dtype, const void* data, std::size_t count, int threads = 0);

template <class T>
void write_vector(const std::string& path, std::span<const T> v) {
  write_array(path, dtype_of<T>(), v.data(), v.size());
}

bool has_npy_suffix(const std::string& path);

// An output written so that a failed run leaves nothing behind.
// - A regular file (or a name that does not exist yet) is written to a temporary name beside it,
//   created at the first write, and renamed over it by commit(); the file keeps its permissions.
//   Destroyed without commit(), the temporary is removed. A symbolic link is followed: its target
//   is replaced, the link stays.
// - An existing target that is not a regular file (a device such as /dev/null, a FIFO, a
//   terminal) is written in place: it is never replaced by a regular file.
// - Path "-" writes to standard output.
// Every write is checked: finish()/commit() throw Error naming the output when one failed (a full
// disk, a closed standard output).
class AtomicOutput {
 public:
  // Resolves the target and checks that it can be written (InputError naming it if not: missing
  // or unwritable directory, a directory given as the file). Creates nothing.
  explicit AtomicOutput(std::string path);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  std::ostream& stream();  // the first call creates the temporary (or opens the target in place)
  // Appends `bytes` bytes after what stream() holds. Into a temporary file, large writes go in
  // pieces that `threads` threads (0: default_threads()) write with pwrite; to standard output or
  // a device, through stream(). A failed write throws Error naming the output.
  void write(const void* data, std::size_t bytes, int threads = 0);
  const std::string& path() const { return path_; }
  bool same_destination(const AtomicOutput& other) const;  // both name one file, or both standard output

  void finish();  // flushes and checks every write; the output is complete but not yet in place
  void commit();  // finish(), then renames into place

  // Several outputs of one command: every one is finished (all writes checked) before the first is
  // renamed into place, so a failed write leaves none of them behind.
  static void commit_all(std::initializer_list<AtomicOutput*> outputs);

 private:
  enum class Mode { stdout_, in_place, replace };
  void open();
  std::string path_;    // as given
  std::string target_;  // symbolic links resolved
  std::string temp_;
  Mode mode_{Mode::replace};
  std::ofstream file_;
  int slot_{-1};  // entry in the table of temporaries that remove_temporaries() deletes
  bool opened_{false}, finished_{false}, committed_{false};
};

// What `path` held before a run replaced it (a regular file, or a folder such as a table
// folder), kept under a name beside it: hard links where the file system allows them (no bytes
// copied), else a copy. The destructor drops the kept copy; restore() puts it back once the
// run's new output at `path` has been removed (a distributed run that failed on another rank
// after this one renamed its output into place). Nothing is kept when `path` is absent or is
// something else (a device, standard output).
class PreviousOutput {
 public:
  explicit PreviousOutput(std::string path);
  ~PreviousOutput();
  PreviousOutput(const PreviousOutput&) = delete;
  PreviousOutput& operator=(const PreviousOutput&) = delete;
  bool kept() const { return !kept_.empty(); }
  void restore();  // `path` must be gone; throws Error naming it when the old content cannot return

 private:
  std::string path_, kept_;
};

// The .npy header of `count` elements when out.path() ends in .npy (nothing for a raw file): the
// elements follow through out.write(), in as many pieces as the caller likes.
void write_array_header(AtomicOutput& out, DType dtype, std::size_t count);

// Writes the array into `out` (.npy when out.path() ends in .npy) without committing it: for
// commands with several outputs that commit them together (AtomicOutput::commit_all).
void write_array(AtomicOutput& out, DType dtype, const void* data, std::size_t count, int threads = 0);

// Deletes the temporary file of every AtomicOutput not yet committed or destroyed. Async-signal-
// safe: a program's SIGINT/SIGTERM handler calls it and then re-raises the signal (the CLI does),
// so an interrupted run leaves no *.tmp-* file behind.
void remove_temporaries() noexcept;

// A temporary folder for remove_temporaries() too: its files NAME/0 … NAME/(files - 1) and then
// the folder itself. Returns the slot to release once the folder is gone (-1: not registered,
// when the table of temporaries is full; the owner still removes it on every other path).
int register_temporary_folder(const std::string& dir, int files);
void release_temporary_folder(int slot);

}  // namespace tandem::io
