// The .npy reader (io::read_array): header parsing, shape arithmetic, data size checks.
//
// Each input is read as a .npy file of u8 and of every element type whose type code ("u1", "f8",
// ...) appears in it: a header names one type, and reading as any other stops at the type check
// (u8 covers that path), so the rest would only cost time. An accepted file must hold exactly
// `count` elements, copied from the end of the file, and must survive a write/read round trip.
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/types.hpp"

namespace {

using namespace tandem;
constexpr std::pair<DType, std::string_view> kTypes[] = {
    {DType::u8, "u1"},  {DType::i8, "i1"},  {DType::u16, "u2"}, {DType::i16, "i2"}, {DType::u32, "u4"},
    {DType::i32, "i4"}, {DType::u64, "u8"}, {DType::i64, "i8"}, {DType::f32, "f4"}, {DType::f64, "f8"}};

void check_accepted(const io::Array& a, DType asked, const std::uint8_t* data, std::size_t size) {
  std::size_t bytes = 0;
  fuzz::check(a.dtype == asked, "read_array returned another element type than asked for");
  fuzz::check(!__builtin_mul_overflow(a.count, dtype_size(asked), &bytes) && bytes == a.bytes.size(),
              fmt::format("read_array accepted {} elements of {} but holds {} bytes", a.count, to_string(asked),
                          a.bytes.size()));
  fuzz::check(bytes <= size && (bytes == 0 || std::memcmp(a.bytes.data(), data + size - bytes, bytes) == 0),
              "read_array's elements are not the last bytes of the file");
  const std::string again = (fuzz::scratch_dir() / "again.npy").string();
  io::write_array(again, asked, a.bytes.data(), a.count);
  const io::Array b = io::read_array(again, asked);
  fuzz::check(b.count == a.count && b.bytes == a.bytes, "a written .npy file reads back different");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input("input.npy", data, size);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& [type, code] : kTypes) {
    if (type != DType::u8 && text.find(code) == std::string_view::npos) continue;
    std::optional<io::Array> array;
    fuzz::expect_tandem_errors_only("read_array", [&, type = type] { array = io::read_array(path, type); });
    if (!array) continue;
    try {
      check_accepted(*array, type, data, size);
    } catch (const std::exception& e) {  // the round trip of an accepted file may not fail either
      fuzz::fail(std::string("an accepted .npy file failed afterwards: ") + e.what());
    }
  }
  return 0;
}
