// Reading raw and .npy arrays from any input (sized files read in place, streams to their end),
// the .npy header parser, and writing arrays through AtomicOutput (atomic_output.cpp).
#include "tandem/core/io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "core/pread_parts.hpp"
#include "tandem/core/detail/io_pieces.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::io {
namespace {

using detail::kMaxIo;

constexpr std::size_t kNoLimit = std::numeric_limits<std::size_t>::max() - 1;
constexpr std::size_t kMaxNpyHeader = std::size_t{1} << 20;  // numpy writes a few hundred bytes
constexpr std::size_t kMaxNpyDims = 64;                      // numpy's own limit

std::string input_name(const std::string& path) { return path == "-" ? "standard input" : path; }

// ---- reading ---------------------------------------------------------------------------------------

// An input opened for reading: a sized regular file, or a stream read until end of file.
class InputFile {
 public:
  explicit InputFile(const std::string& path) : name_(input_name(path)) {
    if (path != "-") {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw InputError(fmt::format("{}: cannot open for reading ({})", name_, std::strerror(errno)));
      owned_ = true;
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      close_fd();
      throw InputError(fmt::format("{}: cannot read ({})", name_, std::strerror(errno)));
    }
    if (S_ISDIR(st.st_mode)) {
      close_fd();
      throw InputError(fmt::format("{}: is a directory, not a file", name_));
    }
    // /proc files say size 0 and pipes say nothing: only a regular file with a size is trusted.
    const off_t pos = ::lseek(fd_, 0, SEEK_CUR);
    if (S_ISREG(st.st_mode) && st.st_size > 0 && pos >= 0 && pos <= st.st_size) {
      sized_ = true;
      start_ = static_cast<std::uint64_t>(pos);
      remaining_ = static_cast<std::uint64_t>(st.st_size - pos);
    }
  }
  ~InputFile() { close_fd(); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  const std::string& name() const { return name_; }
  bool sized() const { return sized_; }
  std::uint64_t remaining() const { return sized_ ? remaining_ - std::min(remaining_, consumed_) : 0; }
  std::uint64_t consumed() const { return consumed_; }
  int fd() const { return fd_; }
  std::uint64_t offset() const { return start_ + consumed_; }  // the file position reading has reached

  std::size_t read_some(void* p, std::size_t n) {
    for (;;) {
      const ssize_t got = ::read(fd_, p, std::min(n, kMaxIo));
      if (got >= 0) {
        consumed_ += static_cast<std::uint64_t>(got);
        return static_cast<std::size_t>(got);
      }
      if (errno != EINTR)
        throw InputError(fmt::format("{}: read failed at byte {} ({})", name_, consumed_, std::strerror(errno)));
    }
  }

  // Reads n bytes at byte `at` of a sized file (counted from where the input starts; the file
  // position is left alone), in pieces on `threads` threads.
  void read_at(void* p, std::size_t n, std::uint64_t at, int threads) {
    const std::size_t got = pread_pieces(p, n, at, threads);
    if (got < n) throw InputError(fmt::format("{}: read failed at byte {} (the file ended early)", name_, at + got));
  }

  // Reads up to n bytes of a sized file from the current position on `threads` threads and moves
  // the position past them; fewer only where the file ended (it shrank since it was opened).
  std::size_t read_parallel(void* p, std::size_t n, int threads) {
    const std::size_t got = pread_pieces(p, n, consumed_, threads);
    consumed_ += got;
    if (::lseek(fd_, static_cast<off_t>(start_ + consumed_), SEEK_SET) < 0)
      throw InputError(fmt::format("{}: read failed at byte {} ({})", name_, consumed_, std::strerror(errno)));
    return got;
  }

  // Reads until `n` bytes arrived or the input ended; returns how many arrived.
  std::size_t read_upto(void* p, std::size_t n) {
    std::size_t have = 0;
    while (have < n) {
      const std::size_t got = read_some(static_cast<char*>(p) + have, n - have);
      if (got == 0) break;
      have += got;
    }
    return have;
  }

 private:
  // Bytes [at, at + n) of the input into p, read in pieces by an OpenMP team of `threads` (one big
  // read). Returns n, or where the file ended when it ended early (every byte before that was
  // read). A failed read throws InputError naming the byte.
  std::size_t pread_pieces(void* p, std::size_t n, std::uint64_t at, int threads) {
    return pread_parts({fd_, name_, start_}, p, n, at, threads > 0 ? threads : default_threads());
  }

  void close_fd() {
    if (owned_) ::close(fd_);
    owned_ = false;
  }
  std::string name_;
  int fd_{0};
  bool owned_{false};
  bool sized_{false};
  std::uint64_t start_{0};  // the file position the input starts at (standard input may be part-read)
  std::uint64_t remaining_{0};
  std::uint64_t consumed_{0};
};

std::size_t saturating_add(std::size_t a, std::size_t b) {
  return a > std::numeric_limits<std::size_t>::max() - b ? std::numeric_limits<std::size_t>::max() : a + b;
}

// Reads the rest of `f` into `buf` (which it resizes; no zero-fill with UninitAllocator). A sized
// file is read on `threads` threads into a buffer of exactly its size plus the one byte that
// proves its end; a stream grows the buffer geometrically. Stops after `limit` + 1 bytes: more
// than `limit` is an error the caller reports. Out of memory is an Error naming the input.
template <class Buffer>
void read_to_end(InputFile& f, Buffer& buf, std::size_t limit = kNoLimit, int threads = 0) {
  const std::size_t cap = saturating_add(limit, 1);
  std::size_t have = 0;
  std::size_t size = f.sized() ? saturating_add(static_cast<std::size_t>(f.remaining()), 1) : std::size_t{64} << 10;
  try {
    buf.resize(size = std::min(size, cap));
    bool ended = false;
    if (f.sized()) {
      const std::size_t want = std::min<std::size_t>(static_cast<std::size_t>(f.remaining()), buf.size());
      have = f.read_parallel(buf.data(), want, threads);
      ended = have < want;  // it shrank since it was opened: its end is known
    }
    while (!ended) {
      if (have == buf.size()) {
        if (have >= cap) break;
        size = std::min(std::max<std::size_t>(std::size_t{1} << 20, saturating_add(have, have)), cap);
        buf.resize(size);
      }
      const std::size_t got = f.read_some(buf.data() + have, buf.size() - have);
      if (got == 0) break;
      have += got;
    }
  } catch (const std::bad_alloc&) {
    throw HostMemoryError(fmt::format("{}: out of memory: cannot allocate {} to read it", f.name(), human_bytes(size)));
  } catch (const std::length_error&) {
    throw Error(fmt::format("{}: too large to hold in memory ({} read)", f.name(), human_bytes(have)));
  }
  buf.resize(have);
}

// ---- the .npy header ---------------------------------------------------------------------------------

std::string npy_descr(DType t) {
  switch (t) {
    case DType::u8: return "|u1";
    case DType::i8: return "|i1";
    case DType::u16: return "<u2";
    case DType::i16: return "<i2";
    case DType::u32: return "<u4";
    case DType::i32: return "<i4";
    case DType::u64: return "<u8";
    case DType::i64: return "<i8";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
  }
  return "?";
}

// The element type a .npy descr names in this machine's byte order, if it is one tandem reads.
std::optional<DType> descr_dtype(const std::string& d) {
  for (DType t : {DType::u8, DType::u16, DType::u32, DType::u64, DType::i8, DType::i16, DType::i32, DType::i64,
                  DType::f32, DType::f64}) {
    std::string ours = npy_descr(t);
    if (d == ours || (d.size() == 3 && ours.size() == 3 && d.substr(1) == ours.substr(1) &&
                      (d[0] == '<' || d[0] == '|' || d[0] == '=')))
      return t;
  }
  return std::nullopt;
}

std::string descr_to_name(const std::string& d) {
  const auto t = descr_dtype(d);
  return t ? std::string(to_string(*t)) : d;
}

// Text from a header for an error message: printable ASCII, at most 40 characters.
std::string quoted_excerpt(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 40; ++i) {
    const char c = s[i];
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (s.size() > 40) out += "...";
  return out;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

// One pass over the dictionary with a cursor; every step consumes input or fails, so the work is
// bounded by the header's length whatever the bytes are.
class NpyDictParser {
 public:
  NpyDictParser(std::string_view s, const std::string& name, std::size_t offset)
      : s_(s), name_(name), offset_(offset) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    skip_space();
    expect('{', "expected '{' opening the header dictionary");
    for (;;) {
      skip_space();
      if (eat('}')) break;
      const std::size_t key_at = pos_;
      const std::string key(string_literal("expected a quoted key or '}'"));
      skip_space();
      expect(':', fmt::format("expected ':' after the key '{}'", quoted_excerpt(key)));
      skip_space();
      if (key == "descr") {
        if (seen_descr) fail_at(key_at, "'descr' appears twice");
        if (peek() == '[') fail("'descr' is a structured dtype (a list): only plain numeric types are supported");
        h.descr = string_literal("expected a quoted type string for 'descr'");
        seen_descr = true;
      } else if (key == "fortran_order") {
        if (seen_order) fail_at(key_at, "'fortran_order' appears twice");
        h.fortran_order = boolean();
        seen_order = true;
      } else if (key == "shape") {
        if (seen_shape) fail_at(key_at, "'shape' appears twice");
        h.shape = shape();
        seen_shape = true;
      } else {
        fail_at(key_at,
                fmt::format("unknown key '{}' (expected 'descr', 'fortran_order' and 'shape')", quoted_excerpt(key)));
      }
      skip_space();
      if (eat(',')) continue;
      if (eat('}')) break;
      fail(fmt::format("expected ',' or '}}' after the value of '{}'", key));
    }
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the header dictionary");
    if (!seen_descr) fail("no 'descr' in the header");
    if (!seen_order) fail("no 'fortran_order' in the header");
    if (!seen_shape) fail("no 'shape' in the header");
    return h;
  }

 private:
  [[noreturn]] void fail_at(std::size_t at, const std::string& what) const {
    throw InputError(fmt::format("{}: not a valid .npy file: byte {}: {}", name_, offset_ + at, what));
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!eat(c)) fail(what);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool starts_with(std::string_view word) const { return s_.substr(pos_, word.size()) == word; }

  std::string_view string_literal(const std::string& what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(what);
    const std::size_t end = s_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    const std::string_view body = s_.substr(pos_ + 1, end - pos_ - 1);
    if (body.find('\\') != std::string_view::npos) fail("escape sequences in strings are not supported");
    pos_ = end + 1;
    return body;
  }

  bool boolean() {
    if (starts_with("True")) {
      pos_ += 4;
      return true;
    }
    if (starts_with("False")) {
      pos_ += 5;
      return false;
    }
    fail("expected True or False for 'fortran_order'");
  }

  std::vector<std::uint64_t> shape() {
    std::vector<std::uint64_t> dims;
    expect('(', "expected a tuple '(...)' for 'shape'");
    for (;;) {
      skip_space();
      if (eat(')')) break;
      if (dims.size() == kMaxNpyDims) fail(fmt::format("the shape has more than {} dimensions", kMaxNpyDims));
      dims.push_back(dimension());
      skip_space();
      if (eat(',')) continue;
      if (eat(')')) break;
      fail("expected ',' or ')' in the shape");
    }
    return dims;
  }

  std::uint64_t dimension() {
    const std::size_t at = pos_;
    std::size_t end = pos_ + (peek() == '-' || peek() == '+' ? 1 : 0);
    while (end < s_.size() && s_[end] >= '0' && s_[end] <= '9') ++end;
    const std::string_view text = s_.substr(at, end - at);
    if (peek() == '-') fail(fmt::format("negative dimension {} in the shape", quoted_excerpt(text)));
    if (peek() == '+') ++pos_;
    if (pos_ == end) fail("expected a non-negative integer in the shape");
    std::uint64_t v = 0;
    for (; pos_ < end; ++pos_) {
      const auto d = static_cast<std::uint64_t>(s_[pos_] - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10)
        fail_at(at, fmt::format("dimension {} does not fit in 64 bits", quoted_excerpt(text)));
      v = v * 10 + d;
    }
    eat('L');  // Python 2 wrote long integers with a suffix
    return v;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t offset_;
  std::size_t pos_{0};
};

InputError bad_npy(const std::string& name, std::uint64_t at, const std::string& why) {
  return InputError(fmt::format("{}: not a valid .npy file: byte {}: {}", name, at, why));
}

// The magic, version, header length and header dictionary of a .npy input, parsed; `start`: the
// dictionary's byte offset (for error messages).
NpyHeader read_npy_dict(InputFile& f, std::size_t& start) {
  const std::string& name = f.name();
  auto bad = [&](std::uint64_t at, const std::string& why) { return bad_npy(name, at, why); };
  unsigned char pre[12] = {};
  std::size_t got = f.read_upto(pre, 10);
  if (got < 6 || std::memcmp(pre, "\x93NUMPY", 6) != 0) throw bad(0, "missing the magic string \\x93NUMPY");
  if (got < 10) throw bad(got, "truncated header");
  const unsigned major = pre[6];
  std::size_t header_len = 0;
  start = 10;
  if (major == 1) {
    header_len = pre[8] | (std::size_t{pre[9]} << 8);
  } else if (major == 2 || major == 3) {
    if (f.read_upto(pre + 10, 2) < 2) throw bad(10, "truncated header");
    for (int i = 0; i < 4; ++i) header_len |= std::size_t{pre[8 + i]} << (8 * i);
    start = 12;
  } else {
    throw bad(6, fmt::format("unsupported version {}", major));
  }
  if (header_len > kMaxNpyHeader)
    throw bad(8, fmt::format("header length {} is more than the {} bytes accepted", header_len, kMaxNpyHeader));
  if (f.sized() && header_len > f.remaining())
    throw bad(start, fmt::format("truncated header: {} bytes announced, {} present", header_len, f.remaining()));
  std::string dict(header_len, '\0');
  if (f.read_upto(dict.data(), header_len) < header_len) throw bad(start, "truncated header");
  return parse_npy_header(dict, name, start);
}

// Reads the magic, version, header length and header of a .npy input; checks the type and shape
// against `dtype`; returns the number of data bytes the header promises. A sized file whose
// length disagrees fails here, before any memory is set aside for the data.
std::size_t read_npy_header(InputFile& f, DType dtype) {
  const std::string& name = f.name();
  auto bad = [&](std::uint64_t at, const std::string& why) { return bad_npy(name, at, why); };
  std::size_t start = 0;
  const NpyHeader h = read_npy_dict(f, start);
  if (h.descr.size() == 3 && h.descr[0] == '>') throw bad(start, "big-endian data is not supported");
  if (descr_to_name(h.descr) != to_string(dtype))
    throw InputError(fmt::format("{}: type mismatch: the .npy header says '{}' ({}) but {} was asked for", name,
                                 quoted_excerpt(h.descr), quoted_excerpt(descr_to_name(h.descr)), to_string(dtype)));
  if (h.fortran_order) throw bad(start, "Fortran order is not supported");
  std::uint64_t count = 1;
  int non_unit = 0;
  for (auto d : h.shape) {
    non_unit += d != 1;
    count = d == 0 || count == 0 ? 0 : count * d;  // at most one factor differs from 1 below
  }
  if (non_unit > 1) throw bad(start, fmt::format("shape {} is not one-dimensional", shape_text(h.shape)));
  const std::size_t es = dtype_size(dtype);
  const std::uint64_t max_count = static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max()) / es;
  if (count > max_count)
    throw bad(start, fmt::format("shape {} is {} elements of {} bytes: more than a 64-bit size can hold",
                                 shape_text(h.shape), count, es));
  const std::size_t bytes = static_cast<std::size_t>(count) * es;
  if (f.sized() && bytes != f.remaining())
    throw InputError(
        fmt::format("{}: truncated or oversized .npy data: the header promises {} elements ({} bytes) "
                    "but {} bytes follow",
                    name, count, bytes, f.remaining()));
  return bytes;
}

void check_raw_size(const InputFile& f, std::uint64_t bytes, DType dtype) {
  const std::size_t es = dtype_size(dtype);
  if (bytes % es != 0)
    throw InputError(fmt::format("{}: size {} bytes is not a multiple of the {}-byte element size of {}", f.name(),
                                 bytes, es, to_string(dtype)));
}

// The rest of `f` as elements of `dtype`: the data after a .npy header that promised `npy` bytes,
// or a whole raw file.
Array read_elements(InputFile& f, DType dtype, std::optional<std::size_t> npy, int threads) {
  const std::size_t es = dtype_size(dtype);
  Array a;
  a.dtype = dtype;
  if (npy) {
    const std::size_t want = *npy;
    read_to_end(f, a.bytes, want, threads);
    if (a.bytes.size() != want)  // a stream: its length is known only now
      throw InputError(fmt::format(
          "{}: truncated or oversized .npy data: the header promises {} elements ({} bytes) "
          "but {} bytes follow",
          f.name(), want / es, want, a.bytes.size() > want ? "more than that" : std::to_string(a.bytes.size())));
  } else {
    if (f.sized()) check_raw_size(f, f.remaining(), dtype);  // known before reading: fail without reading it
    read_to_end(f, a.bytes, kNoLimit, threads);
    check_raw_size(f, a.bytes.size(), dtype);
  }
  a.count = a.bytes.size() / es;
  return a;
}

}  // namespace

// ---- public: reading -----------------------------------------------------------------------------

MappedArray holding(Array a) {
  auto kept = std::make_shared<Array>(std::move(a));
  MappedArray m;
  m.dtype = kept->dtype;
  m.count = kept->count;
  m.data = kept->bytes.data();
  m.owner = kept;
  m.read_buffer = std::move(kept);
  return m;
}

bool has_npy_suffix(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
}

bool is_sized_file(const std::string& path) {
  struct stat st {};
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

NpyHeader parse_npy_header(std::string_view dict, const std::string& name, std::size_t offset) {
  return NpyDictParser(dict, name, offset).parse();
}

CharBuffer read_bytes(const std::string& path, int threads) {
  InputFile f(path);
  CharBuffer out;
  read_to_end(f, out, kNoLimit, threads);
  return out;
}

Array read_array(const std::string& path, DType dtype, int threads) {
  InputFile f(path);
  std::optional<std::size_t> npy;
  if (has_npy_suffix(path)) npy = read_npy_header(f, dtype);
  return read_elements(f, dtype, npy, threads);
}

// Read, never mapped: a mapped file truncated by another process raises SIGBUS wherever its
// pages are next touched, while a read of a file that shrinks ends where it ended and is checked.
MappedArray map_array(const std::string& path, DType dtype, int threads) {
  return holding(read_array(path, dtype, threads));
}

DType npy_dtype(const std::string& path) {
  InputFile f(path);
  std::size_t start = 0;
  const NpyHeader h = read_npy_dict(f, start);
  if (h.descr.size() == 3 && h.descr[0] == '>') throw bad_npy(f.name(), start, "big-endian data is not supported");
  if (const auto t = descr_dtype(h.descr)) return *t;
  throw InputError(
      fmt::format("{}: the .npy element type '{}' is not one tandem reads", f.name(), quoted_excerpt(h.descr)));
}

namespace {

// Part `part` of `parts` of the array file `f` (named `path`), checked: its elements as bytes
// [begin, end) of the file.
struct PartBytes {
  std::uint64_t begin{0}, end{0};
};

PartBytes part_bytes(InputFile& f, const std::string& path, DType dtype, std::size_t part, std::size_t parts) {
  if (!f.sized())
    throw InputError(
        fmt::format("{}: not a regular file with a size: a part of it cannot be read on its own", f.name()));
  const std::size_t es = dtype_size(dtype);
  const std::uint64_t file_size = f.remaining();
  std::uint64_t data_at = 0, bytes = file_size;
  if (has_npy_suffix(path)) {
    bytes = read_npy_header(f, dtype);
    data_at = f.consumed();
  } else {
    check_raw_size(f, file_size, dtype);
  }
  const std::uint64_t count = bytes / es;
  return {data_at + es * std::uint64_t((unsigned __int128)count * part / parts),
          data_at + es * std::uint64_t((unsigned __int128)count * (part + 1) / parts)};
}

void check_part(std::size_t part, std::size_t parts) {
  if (parts == 0 || part >= parts) throw UsageError(fmt::format("read_array_part: part {} of {}", part, parts));
}

Array read_part(InputFile& f, const PartBytes& p, DType dtype, int threads) {
  Array a;
  a.dtype = dtype;
  a.count = std::size_t((p.end - p.begin) / dtype_size(dtype));
  a.bytes.resize(std::size_t(p.end - p.begin));
  f.read_at(a.bytes.data(), a.bytes.size(), p.begin, threads);
  return a;
}

}  // namespace

Array read_array_part(const std::string& path, DType dtype, std::size_t part, std::size_t parts) {
  check_part(part, parts);
  InputFile f(path);
  return read_part(f, part_bytes(f, path, dtype, part, parts), dtype, 0);
}

ArrayExtent array_extent(const std::string& path, DType dtype) {
  InputFile f(path);
  const PartBytes all = part_bytes(f, path, dtype, 0, 1);
  return {(all.end - all.begin) / dtype_size(dtype), all.begin};
}

MappedArray map_array_part(const std::string& path, DType dtype, std::size_t part, std::size_t parts, int threads) {
  check_part(part, parts);
  InputFile f(path);
  return holding(read_part(f, part_bytes(f, path, dtype, part, parts), dtype, threads));
}

CharBuffer read_bytes_range(const std::string& path, std::uint64_t begin, std::uint64_t end) {
  InputFile f(path);
  if (!f.sized() && end > begin)
    throw InputError(
        fmt::format("{}: not a regular file with a size: a part of it cannot be read on its own", f.name()));
  if (end < begin || end > f.remaining())
    throw UsageError(fmt::format("{}: bytes [{}, {}) lie outside its {} bytes", f.name(), begin, end, f.remaining()));
  CharBuffer out(end - begin);
  f.read_at(out.data(), out.size(), begin, 0);
  return out;
}

struct SizedFile::Impl {
  InputFile file;
  std::uint64_t size;
  explicit Impl(const std::string& path) : file(path), size(file.remaining()) {
    if (!file.sized()) throw InputError(fmt::format("{}: not a regular file with a size", file.name()));
  }
};

SizedFile::SizedFile(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}
SizedFile::~SizedFile() = default;
SizedFile::SizedFile(SizedFile&&) noexcept = default;
SizedFile& SizedFile::operator=(SizedFile&&) noexcept = default;
const std::string& SizedFile::name() const { return impl_->file.name(); }
std::uint64_t SizedFile::size() const { return impl_->size; }

void SizedFile::read(void* dst, std::size_t n, std::uint64_t at, int threads) {
  if (at > impl_->size || n > impl_->size - at)
    throw UsageError(fmt::format("{}: bytes [{}, {}) lie outside its {} bytes", name(), at, at + n, impl_->size));
  impl_->file.read_at(dst, n, at, threads);
}

std::uint64_t file_size(const std::string& path) {
  InputFile f(path);
  if (!f.sized()) throw InputError(fmt::format("{}: not a regular file with a size", f.name()));
  return f.remaining();
}

// ---- public: writing -----------------------------------------------------------------------------

void write_array_header(AtomicOutput& out, DType dtype, std::size_t count) {
  if (has_npy_suffix(out.path())) {
    auto& s = out.stream();
    std::string header =
        fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", npy_descr(dtype), count);
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    const auto len = static_cast<std::uint16_t>(header.size());
    s.write("\x93NUMPY\x01\x00", 8);
    const char lenb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    s.write(lenb, 2);
    s << header;
  }
}

void write_array(AtomicOutput& out, DType dtype, const void* data, std::size_t count, int threads) {
  write_array_header(out, dtype, count);
  out.write(data, count * dtype_size(dtype), threads);
}

void write_array(const std::string& path, DType dtype, const void* data, std::size_t count, int threads) {
  AtomicOutput out(path);
  write_array(out, dtype, data, count, threads);
  out.commit();
}

}  // namespace tandem::io
