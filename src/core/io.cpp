#include "tandem/core/io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <random>
#include <regex>

#include <fmt/format.h>

#include "tandem/core/error.hpp"

namespace tandem::io {
namespace {

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

std::string descr_to_name(const std::string& d) {
  for (DType t : {DType::u8, DType::u16, DType::u32, DType::u64, DType::i8, DType::i16, DType::i32,
                  DType::i64, DType::f32, DType::f64}) {
    std::string ours = npy_descr(t);
    if (d == ours || (d.size() == 3 && ours.size() == 3 && d.substr(1) == ours.substr(1) &&
                      (d[0] == '<' || d[0] == '|' || d[0] == '=')))
      return std::string(to_string(t));
  }
  return d;
}

// Parses a .npy header at the start of `raw`; returns the offset of the data and element count.
std::pair<std::size_t, std::size_t> parse_npy(const std::vector<char>& raw, const std::string& path,
                                              DType dtype) {
  auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{}: not a valid .npy file: {}", path, why));
  };
  if (raw.size() < 10 || std::memcmp(raw.data(), "\x93NUMPY", 6) != 0) throw bad("missing magic");
  const auto major = static_cast<unsigned char>(raw[6]);
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(raw[8]) | (static_cast<unsigned char>(raw[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (raw.size() < 12) throw bad("truncated header");
    for (int i = 0; i < 4; ++i)
      header_len |= std::size_t(static_cast<unsigned char>(raw[8 + i])) << (8 * i);
    start = 12;
  } else {
    throw bad(fmt::format("unsupported version {}", major));
  }
  if (start + header_len > raw.size()) throw bad("truncated header");
  const std::string header(raw.data() + start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    throw bad("no 'descr' in header");
  const std::string descr = m[1];
  if (descr.size() == 3 && descr[0] == '>') throw bad("big-endian data is not supported");
  if (descr_to_name(descr) != to_string(dtype))
    throw InputError(fmt::format("{}: type mismatch: the .npy header says '{}' ({}) but {} was asked for",
                                 path, descr, descr_to_name(descr), to_string(dtype)));
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)")))
    throw bad("Fortran order is not supported");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    throw bad("no 'shape' in header");
  std::string shape = m[1];
  std::vector<std::size_t> dims;
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(shape.begin(), shape.end(), number), end; it != end; ++it)
    dims.push_back(std::stoull(it->str()));
  std::size_t count = 1;
  int non_unit = 0;
  for (auto d : dims) {
    count *= d;
    non_unit += d != 1;
  }
  if (non_unit > 1) throw bad(fmt::format("shape ({}) is not one-dimensional", shape));
  const std::size_t data_start = start + header_len;
  const std::size_t have = raw.size() - data_start;
  if (have != count * dtype_size(dtype))
    throw InputError(fmt::format("{}: truncated or oversized .npy data: header promises {} elements "
                                 "({} bytes) but {} bytes follow",
                                 path, count, count * dtype_size(dtype), have));
  return {data_start, count};
}

}  // namespace

bool has_npy_suffix(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
}

std::vector<char> read_bytes(const std::string& path) {
  if (path == "-") {
    std::vector<char> out((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return out;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: is a directory, not a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open for reading ({})", path, std::strerror(errno)));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(in.tellg());
  in.seekg(0);
  std::vector<char> out(size);
  if (size && !in.read(out.data(), static_cast<std::streamsize>(size)))
    throw InputError(fmt::format("{}: read failed", path));
  return out;
}

Array read_array(const std::string& path, DType dtype) {
  std::vector<char> raw = read_bytes(path);
  Array a;
  a.dtype = dtype;
  std::size_t offset = 0;
  if (has_npy_suffix(path)) {
    std::tie(offset, a.count) = parse_npy(raw, path, dtype);
  } else {
    const std::size_t es = dtype_size(dtype);
    if (raw.size() % es != 0)
      throw InputError(fmt::format("{}: size {} bytes is not a multiple of the {}-byte element size of {}",
                                   path, raw.size(), es, to_string(dtype)));
    a.count = raw.size() / es;
  }
  a.bytes.resize(a.count * dtype_size(dtype));
  if (!a.bytes.empty()) std::memcpy(a.bytes.data(), raw.data() + offset, a.bytes.size());
  return a;
}

void write_array(const std::string& path, DType dtype, const void* data, std::size_t count) {
  AtomicOutput out(path);
  auto& s = out.stream();
  if (has_npy_suffix(path)) {
    std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}",
                                      npy_descr(dtype), count);
    const std::size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    const auto len = static_cast<std::uint16_t>(header.size());
    s.write("\x93NUMPY\x01\x00", 8);
    const char lenb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    s.write(lenb, 2);
    s << header;
  }
  s.write(static_cast<const char*>(data), static_cast<std::streamsize>(count * dtype_size(dtype)));
  out.commit();
}

AtomicOutput::AtomicOutput(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    to_stdout_ = true;
    return;
  }
  std::random_device rd;
  temp_ = fmt::format("{}.tmp-{}-{:x}", path_, ::getpid(), rd());
  file_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!file_)
    throw InputError(fmt::format("{}: cannot open for writing ({})", path_, std::strerror(errno)));
}

AtomicOutput::~AtomicOutput() {
  if (!to_stdout_ && !committed_) {
    file_.close();
    std::remove(temp_.c_str());
  }
}

std::ostream& AtomicOutput::stream() { return to_stdout_ ? std::cout : file_; }

void AtomicOutput::commit() {
  if (to_stdout_) {
    std::cout.flush();
    committed_ = true;
    return;
  }
  file_.flush();
  if (!file_) throw Error(fmt::format("{}: write failed (disk full?)", path_));
  file_.close();
  if (std::rename(temp_.c_str(), path_.c_str()) != 0)
    throw InputError(fmt::format("{}: cannot write ({})", path_, std::strerror(errno)));
  committed_ = true;
}

}  // namespace tandem::io
