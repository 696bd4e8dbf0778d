// Array files and outputs under hostile input: the .npy header parser, sizes from headers,
// inputs that are not regular files, outputs that are devices or links, several outputs at once;
// arrays mapped for reading (io::map_array) against the same files read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tandem/core/detail/io_pieces.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/table/files.hpp"
#include "test_util.hpp"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

// A version-1 .npy file: magic, header length, `dict` padded with spaces and a newline, `data`.
std::string npy_bytes(const std::string& dict, const std::string& data = "") {
  std::string h = dict;
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h.push_back('\n');
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(h.size() & 0xff));
  out.push_back(static_cast<char>(h.size() >> 8));
  return out + h + data;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<std::string> names_in(const TempDir& dir) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(dir.path)) v.push_back(e.path().filename().string());
  return v;
}

}  // namespace

TEST(NpyHeader, ParsesWhatNumpyWrites) {
  auto h = io::parse_npy_header("{'descr': '<u4', 'fortran_order': False, 'shape': (10,), }", "x.npy");
  EXPECT_EQ(h.descr, "<u4");
  EXPECT_FALSE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::uint64_t>{10}));
  h = io::parse_npy_header("{\"shape\":(3, 1 ,),\n\"fortran_order\" : True,'descr':'|u1'}   \n", "x.npy");
  EXPECT_EQ(h.descr, "|u1");
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.shape, (std::vector<std::uint64_t>{3, 1}));
  EXPECT_TRUE(io::parse_npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': ()}", "x").shape.empty());
  EXPECT_EQ(io::parse_npy_header("{'descr': '<f8', 'fortran_order': False, 'shape': (7L,)}", "x").shape[0], 7u);
  EXPECT_EQ(io::parse_npy_header("{'descr':'<u8','fortran_order':False,'shape':(18446744073709551615,)}", "x").shape[0],
            UINT64_MAX);
}

TEST(NpyHeader, RejectsWithFileAndByteOffset) {
  struct Case {
    std::string dict, message;
  };
  const std::vector<Case> cases = {
      {"", "expected '{'"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (-5,), }", "negative dimension -5"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (123456789012345678901234567890,), }",
       "dimension 123456789012345678901234567890 does not fit in 64 bits"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (18446744073709551616,)}", "does not fit in 64 bits"},
      {"{'descr': '<u4', 'fortran_order': False}", "no 'shape'"},
      {"{'fortran_order': False, 'shape': (1,)}", "no 'descr'"},
      {"{'descr': '<u4', 'shape': (1,)}", "no 'fortran_order'"},
      {"{'descr': '<u4', 'descr': '<u4', 'fortran_order': False, 'shape': (1,)}", "'descr' appears twice"},
      {"{'descr': [('a', '<u4')], 'fortran_order': False, 'shape': (1,)}", "structured dtype"},
      {"{'descr': '<u4', 'fortran_order': Maybe, 'shape': (1,)}", "True or False"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (1,), 'extra': 1}", "unknown key 'extra'"},
      {"{'descr' '<u4'}", "expected ':' after the key 'descr'"},
      {"{'descr': '<u4", "unterminated string"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (1 2)}", "expected ',' or ')'"},
      {"{'descr': '<u4', 'fortran_order': False, 'shape': (1,)} junk", "unexpected text"},
      {"{'descr': '<u\\x34', 'fortran_order': False, 'shape': (1,)}", "escape sequences"},
  };
  for (const auto& c : cases) {
    const std::string m = input_error([&] { io::parse_npy_header(c.dict, "bad.npy", 10); });
    EXPECT_TRUE(contains(m, "bad.npy: not a valid .npy file: byte ")) << c.dict << " -> " << m;
    EXPECT_TRUE(contains(m, c.message)) << c.dict << " -> " << m;
  }
  // The offset counts from the dictionary's place in the file.
  EXPECT_TRUE(contains(input_error([] { io::parse_npy_header("{'descr': '<u4', 'shape': (-1,)}", "f", 10); }),
                       "byte 37: negative dimension"));
}

TEST(NpyHeader, HugeAndHostileHeadersAreBounded) {
  // A 30,000-character field once overflowed the stack inside std::regex.
  const std::string long_field = "{'descr': '" + std::string(30000, 'u') + "', 'fortran_order': False, 'shape': (1,)}";
  EXPECT_NO_THROW(io::parse_npy_header(long_field, "x"));
  const std::string long_shape =
      "{'descr': '<u4', 'fortran_order': False, 'shape': (" + std::string(30000, '7') + ",)}";
  EXPECT_TRUE(contains(input_error([&] { io::parse_npy_header(long_shape, "x"); }), "does not fit in 64 bits"));
  std::string many_dims = "{'descr': '<u4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 100; ++i) many_dims += "1,";
  EXPECT_TRUE(contains(input_error([&] { io::parse_npy_header(many_dims + ")}", "x"); }), "more than 64 dimensions"));
  // Every prefix and every single-byte change of a valid header parses or throws InputError.
  const std::string good = "{'descr': '<u4', 'fortran_order': False, 'shape': (10,), }";
  for (std::size_t n = 0; n <= good.size(); ++n) {
    try {
      io::parse_npy_header(good.substr(0, n), "x");
    } catch (const InputError&) {}
    for (char c : {'\0', '\'', '"', '(', ')', '{', '}', ',', ':', '-', '9', '\xff'}) {
      std::string s = good;
      if (n < s.size()) s[n] = c;
      try {
        io::parse_npy_header(s, "x");
      } catch (const InputError&) {}
    }
  }
}

TEST(NpyRead, ShapeFromTheHeaderIsChecked) {
  TempDir dir;
  const std::string p = dir.file("a.npy");
  // 2^62 u32 elements is 2^64 bytes: once wrapped to 0 and accepted with no data.
  write_file(p, npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (4611686018427387904,), }"));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), "more than a 64-bit size can hold"));
  // 2^62 bytes of u8 fits a size_t but not the file: refused before any allocation.
  write_file(p, npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4611686018427387904,), }"));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u8); }), "promises 4611686018427387904 elements"));
  write_file(p, npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (123456789012345678901234567890,), }"));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), p + ": not a valid .npy file: byte 61"));
  write_file(p, npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (-2,), }", std::string(8, '\0')));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), "negative dimension -2"));
  write_file(p, npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (2, 3), }", std::string(24, '\0')));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), "shape (2, 3) is not one-dimensional"));
  write_file(p, npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (1, 2, 1), }", std::string(8, '\x01')));
  EXPECT_EQ(io::read_array(p, DType::u32).count, 2u);
  // A version-2 header longer than the file, and one longer than any header needs.
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8) + std::string("\xff\xff\xff\x7f", 4);
  write_file(p, v2);
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), "is more than the"));
  v2 = std::string("\x93NUMPY\x02\x00", 8) + std::string("\x00\x01\x00\x00", 4) + "{";
  write_file(p, v2);
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), "truncated header"));
}

TEST(NpyRead, DTypeFromTheHeaderAlone) {
  TempDir dir;
  const std::string p = dir.file("a.npy");
  for (const auto& [descr, want] : std::vector<std::pair<std::string, DType>>{
           {"<u4", DType::u32}, {"|u1", DType::u8}, {"<i8", DType::i64}, {"=f8", DType::f64}, {"<f4", DType::f32}}) {
    write_file(p, npy_bytes("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (0,), }"));
    EXPECT_EQ(io::npy_dtype(p), want) << descr;
  }
  write_file(p, npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (0,), }"));
  EXPECT_TRUE(contains(input_error([&] { io::npy_dtype(p); }), p + ": the .npy element type '<c8' is not one"));
  write_file(p, npy_bytes("{'descr': '>u4', 'fortran_order': False, 'shape': (0,), }"));
  EXPECT_TRUE(contains(input_error([&] { io::npy_dtype(p); }), "big-endian data is not supported"));
  write_file(p, "not numpy");
  EXPECT_TRUE(contains(input_error([&] { io::npy_dtype(p); }), p + ": not a valid .npy file: byte 0"));
  EXPECT_TRUE(contains(input_error([&] { io::npy_dtype(dir.file("missing.npy")); }), "missing.npy"));
}

TEST(NpyRead, LongHeaderFieldIsAnErrorNotACrash) {
  TempDir dir;
  const std::string p = dir.file("long.npy");
  write_file(
      p, npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (1,), 'x': '" + std::string(27000, 'a') + "'}"));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), "unknown key 'x'"));
  write_file(p,
             npy_bytes("{'descr': '" + std::string(27000, '<') + "', 'fortran_order': False, 'shape': (1,)}", "abcd"));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(p, DType::u32); }), "type mismatch"));
}

TEST(StreamedInput, FifoRawAndNpy) {
  TempDir dir;
  const std::vector<std::uint32_t> v{9, 8, 7, 6, 5};
  const std::string raw(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  for (const std::string name : {"f.u32", "f.npy"}) {
    const std::string p = dir.file(name);
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    const std::string bytes =
        name == "f.npy" ? npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }", raw) : raw;
    std::thread writer([&] { write_file(p, bytes); });
    EXPECT_EQ(io::read_vector<std::uint32_t>(p), v) << name;
    writer.join();
  }
  // A stream whose header promises more than follows, and one that sends more.
  const std::string p = dir.file("g.npy");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  for (const std::string& data : {raw.substr(0, 8), raw + raw}) {
    std::thread writer(
        [&] { write_file(p, npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (5,), }", data)); });
    const std::string m = input_error([&] { io::read_array(p, DType::u32); });
    writer.join();
    EXPECT_TRUE(contains(m, "promises 5 elements (20 bytes) but")) << m;
  }
}

TEST(StreamedInput, ProcFilesAreReadToTheirEnd) {
  // /proc files report size 0; they were read as empty.
  const auto bytes = io::read_bytes("/proc/self/status");
  EXPECT_GT(bytes.size(), 100u);
  EXPECT_TRUE(contains(std::string(bytes.data(), bytes.size()), "Pid:"));
  EXPECT_FALSE(io::is_sized_file("/proc/self/status"));
  EXPECT_FALSE(io::is_sized_file("-"));
}

TEST(StreamedInput, DirectoryAndMissingFileNameThePath) {
  TempDir dir;
  EXPECT_TRUE(contains(input_error([&] { io::read_bytes(dir.path.string()); }), "is a directory"));
  EXPECT_TRUE(contains(input_error([&] { io::read_array(dir.file("none.u32"), DType::u32); }),
                       dir.file("none.u32") + ": cannot open for reading"));
}

TEST(Output, DevicesAreWrittenInPlace) {
  TempDir dir;
  {
    io::AtomicOutput out("/dev/null");
    out.stream() << "discarded";
    out.commit();
  }
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A link to a device: the link stays, the device receives the bytes.
  const std::string link = dir.file("null-link");
  fs::create_symlink("/dev/null", link);
  io::write_vector<std::uint32_t>(link, std::vector<std::uint32_t>{1, 2});
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"null-link"});
  // Writes to a full device fail with the output's name.
  io::AtomicOutput full("/dev/full");
  full.stream() << std::string(1 << 16, 'x');
  try {
    full.commit();
    FAIL() << "a write to /dev/full succeeded";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "/dev/full: write failed")) << e.what();
  }
}

TEST(Output, FifoIsWrittenInPlace) {
  TempDir dir;
  const std::string p = dir.file("out.fifo");
  ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = read_file(p); });
  io::write_vector<std::uint32_t>(p, std::vector<std::uint32_t>{0x64636261});
  reader.join();
  EXPECT_EQ(got, "abcd");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

TEST(Output, SymlinkToAFileReplacesTheTargetAndKeepsTheLink) {
  TempDir dir;
  fs::create_directory(dir.path / "real");
  const std::string target = dir.file("real/data.bin");
  write_file(target, "old");
  ::chmod(target.c_str(), 0640);
  const std::string link = dir.file("link.bin");
  fs::create_symlink("real/data.bin", link);  // relative to the link's directory
  {
    io::AtomicOutput out(link);
    out.stream() << "new";
    out.commit();
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_file(target), "new");
  EXPECT_EQ(fs::status(target).permissions() & fs::perms::all, fs::perms(0640));
  // A dangling link: its target is created.
  const std::string dangling = dir.file("dangling");
  fs::create_symlink("real/fresh.bin", dangling);
  io::write_vector<std::uint8_t>(dangling, std::vector<std::uint8_t>{'z'});
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(read_file(dir.file("real/fresh.bin")), "z");
  // A loop of links is an error naming the path.
  fs::create_symlink("loop-b", dir.file("loop-a"));
  fs::create_symlink("loop-a", dir.file("loop-b"));
  EXPECT_TRUE(
      contains(input_error([&] { io::AtomicOutput o(dir.file("loop-a")); }), "too many levels of symbolic links"));
}

// A file replaced: untouched until the output is complete, then the new bytes under its name
// with its permissions, no temporary left; a hard link to it keeps the old bytes, as a rename
// over it leaves them.
TEST(Output, ReplacingAFileKeepsItUntilTheOutputIsComplete) {
  TempDir dir;
  const std::string target = dir.file("out.csv");
  write_file(target, "old");
  ::chmod(target.c_str(), 0600);
  fs::create_hard_link(target, dir.file("other-name.csv"));
  {
    io::AtomicOutput out(target);
    out.stream() << "never committed";
  }
  EXPECT_EQ(read_file(target), "old");
  {
    io::AtomicOutput out(target);
    out.stream() << "new";
    EXPECT_EQ(read_file(target), "old");
    out.commit();
  }
  EXPECT_EQ(read_file(target), "new");
  EXPECT_EQ(fs::status(target).permissions() & fs::perms::all, fs::perms(0600));
  EXPECT_EQ(read_file(dir.file("other-name.csv")), "old");
  EXPECT_EQ(names_in(dir).size(), 2u);
}

TEST(Output, NothingIsCreatedBeforeTheFirstWrite) {
  TempDir dir;
  io::AtomicOutput out(dir.file("late.txt"));
  EXPECT_TRUE(names_in(dir).empty());
  out.stream() << "x";
  ASSERT_EQ(names_in(dir).size(), 1u);
  EXPECT_TRUE(contains(names_in(dir)[0], "late.txt.tmp-"));
  // What a SIGTERM handler does: the temporary goes away.
  io::remove_temporaries();
  EXPECT_TRUE(names_in(dir).empty());
  EXPECT_TRUE(contains(input_error([&] { io::AtomicOutput o(dir.path.string()); }), "is a directory"));
}

TEST(Output, SeveralOutputsAppearTogetherOrNotAtAll) {
  TempDir dir;
  {
    io::AtomicOutput keys(dir.file("keys.u32")), values("/dev/full");
    io::write_array(keys, DType::u32, "abcd", 1);
    values.stream() << std::string(1 << 16, 'v');
    EXPECT_THROW(io::AtomicOutput::commit_all({&keys, &values}), Error);
  }
  EXPECT_TRUE(names_in(dir).empty());
  {
    io::AtomicOutput keys(dir.file("keys.u32")), values(dir.file("values.u32"));
    io::write_array(keys, DType::u32, "abcd", 1);
    io::write_array(values, DType::u32, "efgh", 1);
    io::AtomicOutput::commit_all({&keys, &values});
  }
  EXPECT_EQ(read_file(dir.file("keys.u32")), "abcd");
  EXPECT_EQ(read_file(dir.file("values.u32")), "efgh");
}

TEST(Output, SameDestination) {
  TempDir dir;
  const std::string a = dir.file("a");
  EXPECT_TRUE(io::AtomicOutput(a).same_destination(io::AtomicOutput(dir.path.string() + "/./a")));
  EXPECT_FALSE(io::AtomicOutput(a).same_destination(io::AtomicOutput(dir.file("b"))));
  EXPECT_TRUE(io::AtomicOutput("-").same_destination(io::AtomicOutput("-")));
  EXPECT_FALSE(io::AtomicOutput("-").same_destination(io::AtomicOutput(a)));
  fs::create_symlink("a", dir.file("link-to-a"));
  EXPECT_TRUE(io::AtomicOutput(a).same_destination(io::AtomicOutput(dir.file("link-to-a"))));
}

// ---- reading and writing in pieces on several threads ----------------------------------------------

TEST(IoPieces, CoverEveryByteOnceWithNoMoreThreadsThanPieces) {
  const std::size_t mib = io::detail::kMinIoPiece;
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, mib - 1, mib, mib + 1, 7 * mib + 3, 64 * mib + 4096}) {
    for (int threads : {1, 2, 3, 16}) {
      const io::detail::IoPieces plan(bytes, threads);
      SCOPED_TRACE(testing::Message() << bytes << " bytes, " << threads << " threads");
      std::size_t next = 0;
      for (std::size_t i = 0; i < plan.count; ++i) {
        EXPECT_EQ(plan.begin(i), next);
        EXPECT_LT(plan.begin(i), plan.end(i));
        EXPECT_LE(plan.end(i) - plan.begin(i), plan.piece);
        next = plan.end(i);
      }
      EXPECT_EQ(next, bytes);
      EXPECT_GE(plan.threads, 1);
      EXPECT_LE(std::size_t(plan.threads), std::max<std::size_t>(plan.count, 1));
      if (bytes <= mib) {
        EXPECT_EQ(plan.threads, 1);  // a small file is not worth a thread team
      }
      if (bytes > 0) {
        EXPECT_GE(plan.piece, mib);
      }
    }
  }
}

// Files of sizes that are not multiples of the pieces, read with several threads, come back whole.
TEST(ParallelRead, EverySizeComesBackWhole) {
  TempDir dir;
  const std::size_t mib = io::detail::kMinIoPiece;
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, mib / 4 + 1, 5 * mib / 4 + 3}) {
    std::vector<std::uint32_t> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::uint32_t>(i * 2654435761u);
    const std::string bytes(reinterpret_cast<const char*>(v.data()), count * 4);
    const std::string raw = dir.file("v.u32"), npy = dir.file("v.npy");
    write_file(raw, bytes);
    write_file(npy,
               npy_bytes(fmt::format("{{'descr': '<u4', 'fortran_order': False, 'shape': ({},), }}", count), bytes));
    for (int threads : {1, 2, 3, 8}) {
      SCOPED_TRACE(testing::Message() << count << " keys, " << threads << " threads");
      for (const std::string& path : {raw, npy}) {
        const io::Array a = io::read_array(path, DType::u32, threads);
        EXPECT_EQ(a.count, count);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size()), bytes);
      }
      const io::CharBuffer b = io::read_bytes(raw, threads);
      EXPECT_EQ(std::string(b.data(), b.size()), bytes);
    }
    // Parts of the file, as ranks read them, join up into the whole.
    std::string joined;
    for (std::size_t part = 0; part < 3; ++part) {
      const io::Array a = io::read_array_part(npy, DType::u32, part, 3);
      joined.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
    }
    EXPECT_EQ(joined, bytes);
    if (count > 0) {
      const io::CharBuffer r = io::read_bytes_range(raw, 1, bytes.size() - 1 > 1 ? bytes.size() - 1 : 1);
      EXPECT_EQ(std::string(r.data(), r.size()), bytes.substr(1, r.size()));
    }
  }
  // A single byte: not a whole u32, said before anything is read.
  write_file(dir.file("one.u32"), "x");
  EXPECT_TRUE(contains(input_error([&] { io::read_array(dir.file("one.u32"), DType::u32, 4); }),
                       "size 1 bytes is not a multiple of the 4-byte element size of u32"));
  EXPECT_EQ(io::read_bytes(dir.file("one.u32"), 4).size(), 1u);
}

// Large files cut short are still rejected, with the same messages, whatever the threads.
TEST(ParallelRead, TruncatedFilesAreRejected) {
  TempDir dir;
  const std::size_t count = 3 * io::detail::kMinIoPiece / 4 * 3 + 5;  // a few pieces, not a multiple
  const std::string data(count * 4 - 3, '\x5a');                      // three bytes missing
  write_file(dir.file("short.npy"),
             npy_bytes(fmt::format("{{'descr': '<u4', 'fortran_order': False, 'shape': ({},), }}", count), data));
  write_file(dir.file("short.u32"), data);
  for (int threads : {1, 3}) {
    const std::string npy = input_error([&] { io::read_array(dir.file("short.npy"), DType::u32, threads); });
    EXPECT_TRUE(contains(npy, dir.file("short.npy") + ": truncated or oversized .npy data: the header promises " +
                                  std::to_string(count) + " elements"))
        << npy;
    EXPECT_TRUE(contains(npy, std::to_string(data.size()) + " bytes follow")) << npy;
    EXPECT_TRUE(contains(input_error([&] { io::read_array(dir.file("short.u32"), DType::u32, threads); }),
                         "is not a multiple of the 4-byte element size of u32"));
  }
  // A range past the end is refused; a part of a truncated .npy is refused like the whole.
  EXPECT_THROW(io::read_bytes_range(dir.file("short.u32"), 0, data.size() + 1), UsageError);
  EXPECT_TRUE(contains(input_error([&] { io::read_array_part(dir.file("short.npy"), DType::u32, 1, 2); }),
                       "truncated or oversized .npy data"));
}

TEST(ParallelWrite, LargeArraysAreWrittenWholeAfterTheHeader) {
  TempDir dir;
  const std::size_t count = 9 * io::detail::kMinIoPiece / 4 + 7;  // several pieces, the last one short
  std::vector<std::uint32_t> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::uint32_t>(i * 40503u + 1);
  for (int threads : {1, 2, 5}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    io::write_array(dir.file("w.npy"), DType::u32, v.data(), count, threads);
    io::write_array(dir.file("w.u32"), DType::u32, v.data(), count, threads);
    EXPECT_EQ(io::read_vector<std::uint32_t>(dir.file("w.npy")), v);
    EXPECT_EQ(read_file(dir.file("w.u32")), std::string(reinterpret_cast<const char*>(v.data()), count * 4));
    EXPECT_EQ(names_in(dir).size(), 2u);  // no temporary left beside them
    // Text written after the pieces lands after them.
    io::AtomicOutput out(dir.file("mixed.bin"));
    out.stream() << "head";
    out.write(v.data(), count * 4, threads);
    out.stream() << "tail";
    out.commit();
    EXPECT_EQ(read_file(dir.file("mixed.bin")),
              "head" + std::string(reinterpret_cast<const char*>(v.data()), count * 4) + "tail");
    fs::remove(dir.file("mixed.bin"));
  }
}

// A write that fails part-way (here: past the file size limit) throws naming the output, and
// neither the output nor its temporary is left behind.
TEST(ParallelWrite, AFailedWriteLeavesNothing) {
  TempDir dir;
  const std::vector<char> data(5 * io::detail::kMinIoPiece + 3, 'w');
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old), 0);  // the write fails with EFBIG instead
  rlimit limit{}, was{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &was), 0);
  limit = was;
  limit.rlim_cur = io::detail::kMinIoPiece;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  std::string message;
  for (int threads : {1, 3}) {
    try {
      io::write_array(dir.file("big.u8"), DType::u8, data.data(), data.size(), threads);
    } catch (const Error& e) {
      message = e.what();
    }
    EXPECT_TRUE(contains(message, dir.file("big.u8") + ": write failed (File too large)"))
        << threads << " threads: " << message;
    EXPECT_TRUE(names_in(dir).empty()) << threads << " threads";
    message.clear();
  }
  ::setrlimit(RLIMIT_FSIZE, &was);
  ::sigaction(SIGXFSZ, &old, nullptr);
}

// Buffers of 8 MiB and more sit on 2 MiB-aligned huge-page blocks; smaller ones on the heap; both
// grow, shrink and free through the same allocator.
TEST(IoBuffers, LargeBuffersAreHugePageAligned) {
  tandem::io::ByteBuffer small(1000), large;
  large.resize(std::size_t{9} << 20);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large.data()) % tandem::detail::kHugePage, 0u);
  for (std::size_t i = 0; i < large.size(); i += 4096) large[i] = std::byte(i >> 12);
  large.resize(std::size_t{20} << 20);  // moves to a larger block, keeping the bytes
  for (std::size_t i = 0; i < (std::size_t{9} << 20); i += 4096) ASSERT_EQ(large[i], std::byte(i >> 12));
  small.resize(std::size_t{8} << 20);  // crosses the threshold
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.data()) % tandem::detail::kHugePage, 0u);
  large.clear();
  large.shrink_to_fit();
  EXPECT_EQ(large.capacity(), 0u);
}

// ---- io::map_array ----------------------------------------------------------------------------------

namespace {

std::string as_string(const io::MappedArray& m) { return {reinterpret_cast<const char*>(m.data), m.bytes()}; }

std::string u32_npy_dict(std::size_t count) {
  return fmt::format("{{'descr': '<u4', 'fortran_order': False, 'shape': ({},), }}", count);
}

// Runs f with standard input taken from descriptor `fd`, restored afterwards.
template <class F>
void with_stdin(int fd, F f) {
  const int saved = ::dup(0);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(::dup2(fd, 0), 0);
  f();
  ::dup2(saved, 0);
  ::close(saved);
}

}  // namespace

// The elements read_array returns, for files of every size around the page and piece boundaries
// and the huge-buffer threshold, on any number of threads; only non-empty sized files are mapped.
TEST(MapArray, SameElementsAsReadArray) {
  TempDir dir;
  const std::size_t mib = io::detail::kMinIoPiece;
  for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{1023}, mib / 4 + 1, 9 * mib / 4 + 3}) {
    std::vector<std::uint32_t> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::uint32_t>(i * 2654435761u + 7);
    const std::string bytes(reinterpret_cast<const char*>(v.data()), count * 4);
    const std::string raw = dir.file("v.u32"), npy = dir.file("v.npy");
    write_file(raw, bytes);
    write_file(npy, npy_bytes(u32_npy_dict(count), bytes));
    for (int threads : {1, 2, 3}) {
      for (const std::string& path : {raw, npy}) {
        SCOPED_TRACE(testing::Message() << path << ", " << count << " keys, " << threads << " threads");
        const io::MappedArray m = io::map_array(path, DType::u32, threads);
        const io::Array a = io::read_array(path, DType::u32, threads);
        EXPECT_EQ(m.dtype, DType::u32);
        EXPECT_EQ(m.count, a.count);
        EXPECT_EQ(as_string(m), std::string(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size()));
        EXPECT_FALSE(m.mapped);  // read, never mapped: a truncation cannot raise SIGBUS
        if (count > 0) {
          EXPECT_EQ(m.as<std::uint32_t>().back(), v.back());
        }
      }
    }
  }
}

// The parts ranks map of a shared file are read_array_part's, for any number of parts (parts with
// no element included), raw and .npy; an empty file and a part of a truncated .npy are refused alike.
TEST(MapArray, PartsAreReadArrayParts) {
  TempDir dir;
  for (std::size_t count : {std::size_t{2}, std::size_t{5}, std::size_t{300007}}) {
    std::vector<std::uint64_t> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = i * 0x9E3779B97F4A7C15ull;
    const std::string bytes(reinterpret_cast<const char*>(v.data()), count * 8);
    const std::string raw = dir.file("v.u64"), npy = dir.file("v.npy");
    write_file(raw, bytes);
    write_file(npy,
               npy_bytes(fmt::format("{{'descr': '<u8', 'fortran_order': False, 'shape': ({},), }}", count), bytes));
    for (const std::string& path : {raw, npy})
      for (std::size_t parts : {std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
        std::string joined;
        for (std::size_t part = 0; part < parts; ++part) {
          SCOPED_TRACE(testing::Message() << path << ", " << count << " keys, part " << part << " of " << parts);
          const io::MappedArray m = io::map_array_part(path, DType::u64, part, parts, 2);
          const io::Array a = io::read_array_part(path, DType::u64, part, parts);
          EXPECT_EQ(m.count, a.count);
          EXPECT_FALSE(m.mapped);
          EXPECT_EQ(as_string(m), std::string(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size()));
          joined += as_string(m);
        }
        EXPECT_EQ(joined, bytes);
      }
  }
  // An empty file has no parts (it is no sized file): the same error from both.
  write_file(dir.file("empty.u64"), "");
  EXPECT_EQ(input_error([&] { io::map_array_part(dir.file("empty.u64"), DType::u64, 0, 2); }),
            input_error([&] { io::read_array_part(dir.file("empty.u64"), DType::u64, 0, 2); }));
  const std::string data(4 * 1000 - 3, '\x5a');
  write_file(dir.file("short.npy"), npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (1000,), }", data));
  EXPECT_EQ(input_error([&] { io::map_array_part(dir.file("short.npy"), DType::u32, 1, 2); }),
            input_error([&] { io::read_array_part(dir.file("short.npy"), DType::u32, 1, 2); }));
  EXPECT_THROW(io::map_array_part(dir.file("short.npy"), DType::u32, 2, 2), UsageError);
}

// Every error read_array reports, map_array reports with the same message.
TEST(MapArray, ErrorsAreReadArrays) {
  TempDir dir;
  const std::string four(16, '\x01');
  struct Case {
    std::string name, bytes;
    DType dtype;
  };
  const std::vector<Case> cases = {
      {"odd.u32", std::string(4099, 'x'), DType::u32},
      {"one.u64", "x", DType::u64},
      {"nomagic.npy", "not a numpy file at all", DType::u32},
      {"short.npy", std::string("\x93NUMPY\x01\x00", 8), DType::u32},
      {"dict.npy", npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (4,), 'x': 1}", four), DType::u32},
      {"type.npy", npy_bytes(u32_npy_dict(4), four), DType::f32},
      {"twod.npy", npy_bytes("{'descr': '<u4', 'fortran_order': False, 'shape': (2, 2), }", four), DType::u32},
      {"fortran.npy", npy_bytes("{'descr': '<u4', 'fortran_order': True, 'shape': (4,), }", four), DType::u32},
      {"truncated.npy", npy_bytes(u32_npy_dict(5), four), DType::u32},
      {"oversized.npy", npy_bytes(u32_npy_dict(3), four), DType::u32},
      {"huge.npy", npy_bytes(u32_npy_dict(std::size_t{1} << 62)), DType::u32},
      {"bigendian.npy", npy_bytes("{'descr': '>u4', 'fortran_order': False, 'shape': (4,), }", four), DType::u32},
  };
  for (const Case& c : cases) {
    const std::string p = dir.file(c.name);
    write_file(p, c.bytes);
    const std::string want = input_error([&] { io::read_array(p, c.dtype, 2); });
    EXPECT_FALSE(want.empty()) << c.name;
    EXPECT_EQ(input_error([&] { io::map_array(p, c.dtype, 2); }), want) << c.name;
  }
  for (const std::string& p : {dir.file("none.u32"), dir.file("none.npy"), dir.path.string()}) {
    const std::string want = input_error([&] { io::read_array(p, DType::u32); });
    EXPECT_TRUE(contains(want, p + ": ")) << want;
    EXPECT_EQ(input_error([&] { io::map_array(p, DType::u32); }), want);
  }
}

// Streams are read as read_array reads them: FIFOs, and standard input from a pipe or a file.
TEST(MapArray, StreamsAndStandardInputAreRead) {
  TempDir dir;
  const std::vector<std::uint32_t> v{9, 8, 7, 6, 5};
  const std::string raw(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  const std::string npy = npy_bytes(u32_npy_dict(5), raw);
  for (const std::string name : {"f.u32", "f.npy"}) {
    const std::string p = dir.file(name);
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    std::thread writer([&] { write_file(p, name == "f.npy" ? npy : raw); });
    const io::MappedArray m = io::map_array(p, DType::u32, 2);
    writer.join();
    EXPECT_FALSE(m.mapped) << name;
    EXPECT_EQ(as_string(m), raw) << name;
  }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    ASSERT_EQ(::write(fds[1], raw.data(), raw.size()), ssize_t(raw.size()));
    ::close(fds[1]);
  });
  with_stdin(fds[0], [&] {
    const io::MappedArray m = io::map_array("-", DType::u32);
    EXPECT_FALSE(m.mapped);
    EXPECT_EQ(as_string(m), raw);
  });
  writer.join();
  ::close(fds[0]);
  write_file(dir.file("in.u32"), raw);
  const int fd = ::open(dir.file("in.u32").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  with_stdin(fd, [&] {
    const io::MappedArray m = io::map_array("-", DType::u32);
    EXPECT_FALSE(m.mapped);
    EXPECT_EQ(as_string(m), raw);
    EXPECT_EQ(io::map_array("-", DType::u32).count, 0u);  // read as read_array reads it: to its end
  });
  ::close(fd);
}

// .npy data at an offset that is not a multiple of the element size is read, not mapped.
TEST(MapArray, MisalignedNpyDataIsRead) {
  TempDir dir;
  const std::vector<std::uint64_t> v{1, 2, 3, ~std::uint64_t{0}};
  const std::string data(reinterpret_cast<const char*>(v.data()), v.size() * 8);
  std::string dict = "{'descr': '<u8', 'fortran_order': False, 'shape': (4,), }";
  dict.append((68 - 10 - dict.size() - 1), ' ');  // data at byte 68: 4 past a multiple of 8
  dict.push_back('\n');
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file.push_back(static_cast<char>(dict.size()));
  file.push_back('\0');
  write_file(dir.file("odd.npy"), file + dict + data);
  const io::MappedArray m = io::map_array(dir.file("odd.npy"), DType::u64, 2);
  EXPECT_FALSE(m.mapped);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m.data) % alignof(std::uint64_t), 0u);
  EXPECT_EQ(std::vector<std::uint64_t>(m.as<std::uint64_t>().begin(), m.as<std::uint64_t>().end()), v);
}

// Two threads mapping one file at once, each on several threads, both see the whole file.
TEST(MapArray, TwoThreadsMapOneFileAtOnce) {
  TempDir dir;
  const std::size_t count = 3 * io::detail::kMinIoPiece + 5;
  std::vector<std::uint32_t> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<std::uint32_t>(i * 40503u + 11);
  io::write_vector<std::uint32_t>(dir.file("v.npy"), v);
  bool same[2] = {false, false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round) {
        const io::MappedArray m = io::map_array(dir.file("v.npy"), DType::u32, 2);
        same[t] = m.count == count && std::memcmp(m.data, v.data(), count * 4) == 0;
        if (!same[t]) break;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(same[0]);
  EXPECT_TRUE(same[1]);
}

// A table folder read back is the table written, and its columns (the files' pages) stay valid
// when the folder is replaced: the old files are renamed and deleted, never truncated.
TEST(MapArray, TableFolderColumnsOutliveTheFolder) {
  TempDir dir;
  const std::size_t rows = 300001;  // columns over a megabyte, not a whole number of pages
  std::vector<std::int64_t> numbers(rows);
  std::vector<std::string> words(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    numbers[i] = static_cast<std::int64_t>(i * 2654435761u) - 5;
    words[i] = std::string(i % 7, static_cast<char>('a' + i % 26));
  }
  Table t;
  t.add(make_column<std::int64_t>("n", numbers, make_validity(rows, [](std::size_t i) { return i % 5 != 0; })));
  t.add(make_string_column("s", words));
  const std::string folder = dir.file("t");
  write_table_folder(folder, t);
  const Table back = read_table_folder(folder);
  Table other;
  other.add(make_column<std::int64_t>("n", {1}));
  write_table_folder(folder, other);  // replaces the folder the columns came from
  ASSERT_EQ(back.rows(), rows);
  const Column &n = back.column("n"), &s = back.column("s");
  for (std::size_t i = 0; i < rows; ++i) {
    ASSERT_EQ(n.present(i), i % 5 != 0) << i;
    ASSERT_EQ(n.numbers<std::int64_t>()[i], numbers[i]) << i;
    ASSERT_EQ(s.string(i), words[i]) << i;
  }
}
