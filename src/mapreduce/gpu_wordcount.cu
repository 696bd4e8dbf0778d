// GPU word count: a record is a 64-byte chunk of text; its map emits the words that start in it.
// Keys hold up to 32 bytes inline plus a 64-bit hash, the length and the position of the first
// occurrence: longer words are compared against the text itself (the "overflow area").
#include "mapreduce/gpu_jobs.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/mapreduce/gpu_engine.cuh"

namespace tandem::mr::detail {

struct WordKey {
  std::uint64_t h;
  std::uint32_t len;
  std::uint32_t pos;
  std::uint32_t w[8];
};

struct WordCountGpuJob {
  using key_type = WordKey;
  using value_type = std::uint64_t;
  const char* text;
  std::uint64_t n;
  std::uint32_t chunk;

  template <class Emit>
  __device__ void map(std::size_t i, Emit&& emit) const {
    const std::uint64_t first = std::uint64_t(i) * chunk;
    const std::uint64_t last = first + chunk < n ? first + chunk : n;
    for_each_word(text, n, first, last, [&](std::size_t b, std::size_t len) {
      WordKey k;
      k.h = hash_bytes(text + b, len);
      k.len = static_cast<std::uint32_t>(len);
      k.pos = static_cast<std::uint32_t>(b);
#pragma unroll
      for (int j = 0; j < 8; ++j) k.w[j] = 0;
      const std::size_t m = len < 32 ? len : 32;
      for (std::size_t j = 0; j < m; ++j)
        k.w[j / 4] |= std::uint32_t(static_cast<unsigned char>(text[b + j])) << (8 * (j % 4));
      emit(k, value_type{1});
    });
  }
  __device__ void reduce(value_type& a, const value_type& b) const { a += b; }
  __device__ value_type identity() const { return 0; }
  __device__ std::uint64_t hash(const WordKey& k) const { return k.h; }
  __device__ bool equal(const WordKey& a, const WordKey& b) const {
    if (a.h != b.h || a.len != b.len) return false;
#pragma unroll
    for (int j = 0; j < 8; ++j)
      if (a.w[j] != b.w[j]) return false;
    if (a.len <= 32 || a.pos == b.pos) return true;
    for (std::uint32_t j = 32; j < a.len; ++j)
      if (text[a.pos + j] != text[b.pos + j]) return false;
    return true;
  }
};

namespace {
std::vector<std::pair<std::string, std::uint64_t>> run(const char* d_text, std::string_view host, const Options& o,
                                                       EngineStats& st, Report& r) {
  constexpr std::uint32_t kChunk = 64;
  WordCountGpuJob job{d_text, host.size(), kChunk};
  const std::uint64_t records = (host.size() + kChunk - 1) / kChunk;
  auto pairs = borrow_engine<gpu_engine::Engine<WordCountGpuJob>>()->run(job, records, o, st, r);
  std::vector<std::pair<std::string, std::uint64_t>> out;
  out.reserve(pairs.size());
  for (const auto& [k, c] : pairs) out.emplace_back(std::string(host.substr(k.pos, k.len)), c);
  return out;
}
}  // namespace

std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount_device(const char* d_text, std::string_view host_text,
                                                                        const Options& o, EngineStats& st, Report& r) {
  gpu::require();
  if (host_text.size() >= (std::uint64_t{1} << 32))
    throw UsageError("GPU word count: text of 4 GiB or more is not supported");
  if (host_text.empty()) return {};
  return run(d_text, host_text, o, st, r);
}

std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount(std::string_view text, const Options& o,
                                                                 EngineStats& st, Report& r) {
  gpu::require();
  if (text.size() >= (std::uint64_t{1} << 32))
    throw OutOfMemoryError("GPU word count: text of 4 GiB or more does not fit the key format");
  if (text.empty()) return {};
  Stopwatch w;
  gpu::DeviceBuffer<char> d(text.size());
  gpu::Stream s;
  copy_to_device(d.data(), text.data(), text.size(), s);
  s.sync();
  r.add("H2D text", "gpu0", w.seconds(), gpu::format("{} bytes", text.size()));
  return run(d.data(), text, o, st, r);
}

}  // namespace tandem::mr::detail
