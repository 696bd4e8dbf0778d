// TKL1 files: reading, writing, validation; the small parsers of the top-k vocabulary.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "internal.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/topk.hpp"

namespace tandem::topk {

static_assert(std::endian::native == std::endian::little,
              "TKL1 files are little-endian; big-endian hosts need byte swaps");

namespace {
constexpr char kMagic[4] = {'T', 'K', 'L', '1'};
constexpr std::size_t kHeader = 16;
// Lists of this many objects and more are checked on all threads first (lists_pass_checks), with
// at most kCheckThreads bitmaps of m bits (a quarter of the lists' own bytes).
constexpr std::uint64_t kParallelCheckFrom = std::uint64_t{1} << 16;
constexpr int kCheckThreads = 16;

// The first problem in list i, or nothing.
std::optional<std::string> check_list(const Lists& l, std::uint32_t i) {
  const auto list = l.list(i);
  std::vector<std::uint64_t> seen((l.m + 63) / 64, 0);
  std::vector<std::uint64_t> first_pos;  // filled lazily for the duplicate message
  for (std::uint64_t p = 0; p < l.m; ++p) {
    const Entry e = list[p];
    if (std::isnan(e.score)) return fmt::format("list {}, position {}: score is NaN", i, p);
    if (std::isinf(e.score)) return fmt::format("list {}, position {}: score is infinite", i, p);
    if (p > 0 && e.score > list[p - 1].score)
      return fmt::format("list {}, position {}: not sorted descending (score {} after {})", i, p, e.score,
                         list[p - 1].score);
    if (e.id >= l.m)
      return fmt::format("list {}, position {}: id {} is out of range (m = {} objects)", i, p, e.id, l.m);
    std::uint64_t& w = seen[e.id / 64];
    const std::uint64_t bit = std::uint64_t{1} << (e.id % 64);
    if (w & bit) {
      std::uint64_t first = 0;
      while (list[first].id != e.id) ++first;
      std::uint64_t missing = 0;
      // Some id must be missing since the list has m entries; name the smallest one not yet seen
      // after scanning the whole list.
      std::vector<std::uint64_t> all((l.m + 63) / 64, 0);
      for (std::uint64_t q = 0; q < l.m; ++q)
        if (list[q].id < l.m) all[list[q].id / 64] |= std::uint64_t{1} << (list[q].id % 64);
      while (missing < l.m && (all[missing / 64] >> (missing % 64) & 1)) ++missing;
      return fmt::format("list {}, position {}: id {} is duplicated (first at position {}); id {} is missing", i, p,
                         e.id, first, missing);
    }
    w |= bit;
  }
  return std::nullopt;
}

[[noreturn]] void truncated(const std::string& path, std::uint32_t n, std::uint64_t m, std::uint64_t bytes) {
  if (bytes < kHeader)
    throw InputError(fmt::format("{}: truncated: {} bytes, shorter than the 16-byte TKL1 header", path, bytes));
  const std::uint64_t entries = (bytes - kHeader) / sizeof(Entry);
  throw InputError(
      fmt::format("{}: truncated in list {} at position {}: header says {} lists x {} objects "
                  "({} bytes), file has {} bytes",
                  path, entries / m, entries % m, n, m, kHeader + std::uint64_t(n) * m * sizeof(Entry), bytes));
}
}  // namespace

void detail::check_shape(const Lists& l) {
  if (l.n < 1 || l.n > kMaxLists) throw InputError(fmt::format("{} lists: must be between 1 and {}", l.n, kMaxLists));
  if (l.m > (std::uint64_t{1} << 32))
    throw InputError(fmt::format("{} objects: ids are u32, at most 2^32 objects", l.m));
  if (l.entries.size() != std::size_t(l.n) * l.m)
    throw InputError(fmt::format("{} entries for {} lists x {} objects", l.entries.size(), l.n, l.m));
}

void validate(const Lists& l) {
  detail::check_shape(l);
  // Large lists are checked on all threads first; only lists with a problem take the sequential
  // check, which names the first one.
  const int threads = default_threads();
  if (threads > 1 && l.m >= kParallelCheckFrom && detail::lists_pass_checks(l, std::min(threads, kCheckThreads)))
    return;
  std::vector<std::optional<std::string>> errors(l.n);
  parallel_for(l.n, std::max(1, std::min<int>(threads, int(l.n))),
               [&](std::size_t i) { errors[i] = check_list(l, std::uint32_t(i)); });
  for (auto& e : errors)
    if (e) throw InputError(*e);  // the lowest list with a problem
}

Lists read_lists(const std::string& path) {
  std::vector<char> header(kHeader);
  Lists l;
  auto parse_header = [&](std::uint64_t size_known, bool know_size) {
    if (std::memcmp(header.data(), kMagic, 4) != 0)
      throw InputError(fmt::format("{}: not a TKL1 file (the first 4 bytes are not 'TKL1')", path));
    std::memcpy(&l.n, header.data() + 4, 4);
    std::memcpy(&l.m, header.data() + 8, 8);
    if (l.n < 1 || l.n > kMaxLists)
      throw InputError(fmt::format("{}: header says {} lists; must be between 1 and {}", path, l.n, kMaxLists));
    if (l.m > (std::uint64_t{1} << 32))
      throw InputError(fmt::format("{}: header says {} objects; ids are u32, at most 2^32", path, l.m));
    const std::uint64_t want = kHeader + std::uint64_t(l.n) * l.m * sizeof(Entry);
    if (know_size && size_known < want) truncated(path, l.n, l.m, size_known);
    if (know_size && size_known > want)
      throw InputError(fmt::format("{}: {} extra bytes after the last list ({} lists x {} objects)", path,
                                   size_known - want, l.n, l.m));
  };
  if (!io::is_sized_file(path)) {  // standard input, a pipe, a FIFO, a device: read to its end
    auto bytes = io::read_bytes(path);
    if (bytes.size() < kHeader) truncated(path, 0, 1, bytes.size());
    std::memcpy(header.data(), bytes.data(), kHeader);
    parse_header(bytes.size(), true);
    l.entries.resize(std::size_t(l.n) * l.m);
    if (!l.entries.empty()) std::memcpy(l.entries.data(), bytes.data() + kHeader, l.entries.size() * sizeof(Entry));
  } else {  // the lists read in pieces on all threads (one stream read them at a third of the speed)
    io::SizedFile f(path);
    const std::uint64_t size = f.size();
    if (size < kHeader) truncated(path, 0, 1, size);
    f.read(header.data(), kHeader, 0, 1);
    parse_header(size, true);
    l.entries.resize(std::size_t(l.n) * l.m);  // not zero-filled: the read's threads fault its pages in
    if (!l.entries.empty()) f.read(l.entries.data(), l.entries.size() * sizeof(Entry), kHeader);
  }
  try {
    validate(l);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  return l;
}

void write_lists(const std::string& path, const Lists& l) {
  if (l.entries.size() != std::size_t(l.n) * l.m)
    throw UsageError(fmt::format("write_lists: {} entries for {} lists x {} objects", l.entries.size(), l.n, l.m));
  io::AtomicOutput out(path);
  auto& s = out.stream();
  s.write(kMagic, 4);
  s.write(reinterpret_cast<const char*>(&l.n), 4);
  s.write(reinterpret_cast<const char*>(&l.m), 8);
  s.write(reinterpret_cast<const char*>(l.entries.data()), std::streamsize(l.entries.size() * sizeof(Entry)));
  out.commit();
}

// ---- vocabulary ----

Dist parse_dist(std::string_view name) {
  if (name == "uniform") return Dist::uniform;
  if (name == "correlated") return Dist::correlated;
  if (name == "anticorrelated") return Dist::anticorrelated;
  if (name == "zipf") return Dist::zipf;
  throw UsageError(
      fmt::format("unknown distribution '{}' (expected uniform, correlated, anticorrelated or zipf)", name));
}
std::string_view to_string(Dist d) {
  switch (d) {
    case Dist::uniform: return "uniform";
    case Dist::correlated: return "correlated";
    case Dist::anticorrelated: return "anticorrelated";
    case Dist::zipf: return "zipf";
  }
  return "?";
}

Algo parse_algo(std::string_view name) {
  if (name == "auto") return Algo::auto_;
  if (name == "nra") return Algo::nra;
  if (name == "ta") return Algo::ta;
  if (name == "scan") return Algo::scan;
  throw UsageError(fmt::format("unknown top-k algorithm '{}' (expected nra, ta, scan or auto)", name));
}
std::string_view to_string(Algo a) {
  switch (a) {
    case Algo::auto_: return "auto";
    case Algo::nra: return "nra";
    case Algo::ta: return "ta";
    case Algo::scan: return "scan";
  }
  return "?";
}

Memory parse_memory(std::string_view name) {
  if (name == "device") return Memory::device;
  if (name == "managed") return Memory::managed;
  throw UsageError(fmt::format("unknown memory mode '{}' (expected device or managed)", name));
}
std::string_view to_string(Memory m) { return m == Memory::device ? "device" : "managed"; }

Aggregate Aggregate::parse(std::string_view text, std::uint32_t lists) {
  Aggregate a;
  if (text == "sum") a.kind = ScoreCombine::sum;
  else if (text == "min") a.kind = ScoreCombine::min;
  else if (text == "max") a.kind = ScoreCombine::max;
  else if (text.substr(0, 5) == "wsum:") {
    a.kind = ScoreCombine::wsum;
    std::string rest(text.substr(5));
    std::stringstream ss(rest);
    std::string item;
    while (std::getline(ss, item, ',')) {
      char* end = nullptr;
      const double w = std::strtod(item.c_str(), &end);
      if (item.empty() || end != item.c_str() + item.size())
        throw UsageError(fmt::format("aggregate '{}': '{}' is not a number", text, item));
      a.weights.push_back(w);
    }
    if (!rest.empty() && rest.back() == ',') throw UsageError(fmt::format("aggregate '{}': empty weight", text));
  } else {
    throw UsageError(fmt::format("unknown aggregate '{}' (expected sum, wsum:w1,w2,.., min or max)", text));
  }
  a.check(lists);
  return a;
}

void Aggregate::check(std::uint32_t lists) const {
  if (kind != ScoreCombine::wsum) {
    if (!weights.empty()) throw UsageError("only wsum takes weights");
    return;
  }
  if (weights.size() != lists)
    throw UsageError(fmt::format("wsum has {} weights but the data has {} lists", weights.size(), lists));
  for (std::size_t i = 0; i < weights.size(); ++i)
    if (!std::isfinite(weights[i]) || weights[i] < 0)
      throw UsageError(fmt::format("wsum weight {} is {}: weights must be finite and >= 0 (monotone)", i, weights[i]));
}

std::string Aggregate::to_string() const {
  switch (kind) {
    case ScoreCombine::sum: return "sum";
    case ScoreCombine::min: return "min";
    case ScoreCombine::max: return "max";
    case ScoreCombine::wsum: {
      std::string s = "wsum:";
      for (std::size_t i = 0; i < weights.size(); ++i) s += fmt::format("{}{}", i ? "," : "", weights[i]);
      return s;
    }
  }
  return "?";
}

double Stats::mean_depth() const {
  if (depth.empty()) return 0;
  double s = 0;
  for (auto d : depth) s += double(d);
  return s / double(depth.size());
}

}  // namespace tandem::topk
