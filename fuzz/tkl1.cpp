// The TKL1 ranked-list reader (topk::read_lists): header, size checks and list validation.
//
// An accepted file must be exactly the header plus n x m entries, the lists must be the file's
// bytes, validate() must agree, and writing the lists back must give the same bytes. Standard
// input ("-") is read by other code: it must accept the same files and say the same errors.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>

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
  fuzz::check(size == kHeader + bytes,
              fmt::format("read_lists accepted a {}-byte file holding {} entries", size, l.entries.size()));
  fuzz::check(bytes == 0 || std::memcmp(l.entries.data(), data + kHeader, bytes) == 0,
              "read_lists' entries are not the file's bytes");
  topk::validate(l);  // a tandem::Error here is caught as a finding below: the reader let it through
  const std::string again = (fuzz::scratch_dir() / "again.tkl").string();
  topk::write_lists(again, l);
  const std::string written = file_bytes(again);
  fuzz::check(written.size() == size && std::memcmp(written.data(), data, size) == 0,
              "writing the lists back does not give the same file");
}

// The outcome of reading: the lists, or the error message with the path replaced by "-".
struct Outcome {
  std::optional<topk::Lists> lists;
  std::string error;
};

Outcome read(const std::string& name) {
  Outcome o;
  fuzz::expect_tandem_errors_only("read_lists", [&] {
    try {
      o.lists = topk::read_lists(name);
    } catch (const tandem::Error& e) {
      o.error = e.what();
      if (o.error.compare(0, name.size(), name) == 0) o.error.replace(0, name.size(), "-");
      throw;
    }
  });
  return o;
}

Outcome read_from_stdin(const std::string& path) {
  if (!std::freopen(path.c_str(), "rb", stdin)) fuzz::fail("cannot reopen standard input on " + path);
  std::cin.clear();
  return read("-");
}

bool same_lists(const topk::Lists& a, const topk::Lists& b) {
  return a.n == b.n && a.m == b.m && a.entries.size() == b.entries.size() &&
         (a.entries.empty() ||
          std::memcmp(a.entries.data(), b.entries.data(), a.entries.size() * sizeof(topk::Entry)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::write_input("input.tkl", data, size);
  const Outcome file = read(path);
  const Outcome in = read_from_stdin(path);
  fuzz::check(file.lists.has_value() == in.lists.has_value() && file.error == in.error,
              fmt::format("a file and standard input read differently: '{}' vs '{}'", file.error, in.error));
  if (!file.lists) return 0;
  fuzz::check(same_lists(*file.lists, *in.lists), "a file and standard input give different lists");
  try {
    check_accepted(*file.lists, data, size);
  } catch (const std::exception& e) {
    fuzz::fail(std::string("an accepted TKL1 file failed afterwards: ") + e.what());
  }
  return 0;
}
