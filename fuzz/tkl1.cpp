// The TKL1 ranked-list reader (topk::read_lists): header, size checks and list validation.
//
// An accepted file must be exactly the header plus n x m entries, the lists must be the file's
// bytes, validate() must agree, and writing the lists back must give the same bytes.
#include <cstring>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/topk.hpp"

namespace {

using namespace tandem;

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void check_accepted(const topk::Lists& l, const std::uint8_t* data, std::size_t size) {
  constexpr std::size_t kHeader = 16;
  fuzz::check(l.n >= 1 && l.n <= topk::kMaxLists, fmt::format("read_lists accepted {} lists", l.n));
  fuzz::check(l.entries.size() == std::size_t(l.n) * l.m,
              fmt::format("read_lists returned {} entries for {} lists x {} objects", l.entries.size(), l.n, l.m));
  const std::size_t bytes = l.entries.size() * sizeof(topk::Entry);
  fuzz::check(size == kHeader + bytes, fmt::format("read_lists accepted a {}-byte file holding {} entries", size,
                                                   l.entries.size()));
  fuzz::check(bytes == 0 || std::memcmp(l.entries.data(), data + kHeader, bytes) == 0,
              "read_lists' entries are not the file's bytes");
  topk::validate(l);  // a tandem::Error here is caught as a finding below: the reader let it through
  const std::string again = (fuzz::scratch_dir() / "again.tkl").string();
  topk::write_lists(again, l);
  const std::string written = file_bytes(again);
  fuzz::check(written.size() == size && std::memcmp(written.data(), data, size) == 0,
              "writing the lists back does not give the same file");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input("input.tkl", data, size);
  topk::Lists lists;
  bool accepted = false;
  fuzz::expect_tandem_errors_only("read_lists", [&] {
    lists = topk::read_lists(path);
    accepted = true;
  });
  if (!accepted) return 0;
  try {
    check_accepted(lists, data, size);
  } catch (const std::exception& e) {
    fuzz::fail(std::string("an accepted TKL1 file failed afterwards: ") + e.what());
  }
  return 0;
}
