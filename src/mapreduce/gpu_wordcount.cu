// GPU word count: a record is a 64-byte chunk of text; its map emits the words that start in it.
// Keys hold up to 32 bytes inline plus a 64-bit hash, the length and the position of the first
// occurrence: longer words are compared against the text itself (the "overflow area").
#include <bit>
#include <cmath>
#include <cstring>
#include <memory>
#include <span>

#include "mapreduce/gpu_jobs.hpp"
#include "mapreduce/joined_files.hpp"
#include "mapreduce/word_order.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/mapreduce/gpu_engine.cuh"

namespace tandem::mapreduce::detail {

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

constexpr std::uint32_t kInlineBytes = 32;  // WordKey::w holds a word's first 32 bytes

// ASCII letters folded to lower case in place, 16 bytes per thread.
__global__ void k_lower_ascii(char* text, std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x * 16;
  for (std::uint64_t at = (std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x) * 16; at < n; at += stride) {
    const std::uint64_t end = at + 16 < n ? at + 16 : n;
    for (std::uint64_t i = at; i < end; ++i)
      text[i] = static_cast<char>(ascii_lower(static_cast<unsigned char>(text[i])));
  }
}

// Words longer than the key's inline bytes copied out of the device text, one block per word.
__global__ void k_gather_words(const char* text, const std::uint32_t* pos, const std::uint32_t* len,
                               const std::uint64_t* at, std::size_t n, char* out) {
  for (std::size_t w = blockIdx.x; w < n; w += gridDim.x)
    for (std::uint32_t j = threadIdx.x; j < len[w]; j += blockDim.x) out[at[w] + j] = text[pos[w] + j];
}

// The result's words in print order. Keys and counts come down without a pass over pairs; a word
// of up to 32 bytes is read from its key (byte j of a word is byte j of w[] on a little-endian
// host), a longer one is gathered from the device text: the host never needs the text. Views of
// the words are sorted, then each string is made once, at its place.
std::vector<std::pair<std::string, std::uint64_t>> sorted_words(
    const gpu_engine::DeviceResult<WordKey, std::uint64_t>& res, const char* d_text, const Options& o, Report& r,
    cudaStream_t stream) {
  static_assert(std::endian::native == std::endian::little);
  Stopwatch w;
  const std::size_t n = res.n;
  std::unique_ptr<WordKey[]> keys(new WordKey[n]);  // default-initialised: no zero-fill before the copy
  std::unique_ptr<std::uint64_t[]> counts(new std::uint64_t[n]);
  copy_to_host(keys.get(), res.keys, n * sizeof(WordKey), stream);
  copy_to_host(counts.get(), res.values, n * sizeof(std::uint64_t), stream);
  std::vector<std::uint32_t> pos, len;
  std::vector<std::uint64_t> at;
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (keys[i].len > kInlineBytes) {
      pos.push_back(keys[i].pos);
      len.push_back(keys[i].len);
      at.push_back(bytes);
      bytes += keys[i].len;
    }
  std::vector<char> long_bytes(bytes);
  if (!pos.empty()) {
    gpu::DeviceBuffer<std::uint32_t> d_pos(pos.size()), d_len(len.size());
    gpu::DeviceBuffer<std::uint64_t> d_at(at.size());
    gpu::DeviceBuffer<char> d_out(bytes);
    TANDEM_CUDA(cudaMemcpyAsync(d_pos.data(), pos.data(), pos.size() * 4, cudaMemcpyHostToDevice, stream));
    TANDEM_CUDA(cudaMemcpyAsync(d_len.data(), len.data(), len.size() * 4, cudaMemcpyHostToDevice, stream));
    TANDEM_CUDA(cudaMemcpyAsync(d_at.data(), at.data(), at.size() * 8, cudaMemcpyHostToDevice, stream));
    const unsigned grid = static_cast<unsigned>(std::min<std::size_t>(pos.size(), 65535));
    k_gather_words<<<grid, 128, 0, stream>>>(d_text, d_pos.data(), d_len.data(), d_at.data(), pos.size(), d_out.data());
    TANDEM_CUDA(cudaGetLastError());
    TANDEM_CUDA(cudaMemcpyAsync(long_bytes.data(), d_out.data(), bytes, cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
  }
  r.add("D2H result", "gpu0", w.seconds(),
        gpu::format("{} words ({} longer than {} bytes)", n, pos.size(), kInlineBytes));
  w.reset();
  std::vector<std::string_view> words(n);
  for (std::size_t i = 0, next_long = 0; i < n; ++i)
    words[i] = keys[i].len <= kInlineBytes ? std::string_view(reinterpret_cast<const char*>(keys[i].w), keys[i].len)
                                           : std::string_view(long_bytes.data() + at[next_long++], keys[i].len);
  const int threads = o.threads > 0 ? o.threads : default_threads();
  const auto order = word_count_order(words, std::span<const std::uint64_t>(counts.get(), n), threads);
  std::vector<std::pair<std::string, std::uint64_t>> out(n);
  constexpr std::size_t kPiece = 8192;
  for_each_piece(n, kPiece, n < 2 * kPiece ? 1 : threads, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t j = lo; j < hi; ++j) out[j] = {std::string(words[order[j]]), counts[order[j]]};
  });
  r.add("sort output", gpu::format("cpu x{}", threads), w.seconds(), gpu::format("{} words", n));
  return out;
}

// Counts the words of the n bytes at d_text: the result in print order.
std::vector<std::pair<std::string, std::uint64_t>> count_words(const char* d_text, std::uint64_t n, const Options& o,
                                                               EngineStats& st, Report& r) {
  constexpr std::uint32_t kChunk = 64;
  WordCountGpuJob job{d_text, n, kChunk};
  const std::uint64_t records = (n + kChunk - 1) / kChunk;
  auto engine = borrow_engine<gpu_engine::Engine<WordCountGpuJob>>();  // its buffers hold the result
  gpu::Stream stream;
  const Options ro = engine->resolve(job, records, o, r, stream);
  return sorted_words(engine->run_device(job, records, ro, st, r, stream), d_text, o, r, stream);
}

void check_gpu_text_size(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 32))
    throw OutOfMemoryError("GPU word count: text of 4 GiB or more does not fit the key format");
}

}  // namespace

std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount_device(const char* d_text, std::uint64_t n,
                                                                        const Options& o, EngineStats& st, Report& r) {
  gpu::require();
  if (n >= (std::uint64_t{1} << 32)) throw UsageError("GPU word count: text of 4 GiB or more is not supported");
  if (n == 0) return {};
  return count_words(d_text, n, o, st, r);
}

std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount(std::string_view text, const Options& o,
                                                                 EngineStats& st, Report& r) {
  gpu::require();
  check_gpu_text_size(text.size());
  if (text.empty()) return {};
  Stopwatch w;
  gpu::DeviceBuffer<char> d(text.size());
  gpu::Stream s;
  copy_to_device(d.data(), text.data(), text.size(), s);
  s.sync();
  r.add("H2D text", "gpu0", w.seconds(), gpu::format("{} bytes", text.size()));
  return count_words(d.data(), text.size(), o, st, r);
}

std::vector<std::pair<std::string, std::uint64_t>> gpu_wordcount_files(std::vector<io::SizedFile>& files,
                                                                       bool lowercase, const Options& o,
                                                                       EngineStats& st, Report& r) {
  gpu::require();
  std::vector<std::uint64_t> sizes;
  for (const auto& f : files) sizes.push_back(f.size());
  const JoinedFiles joined(sizes);
  const std::uint64_t n = joined.size();
  check_gpu_text_size(n);
  if (n == 0) return {};
  Stopwatch w;
  TANDEM_CUDA(cudaFree(nullptr));  // the process's first CUDA call starts the device: timed apart
  if (w.seconds() > 1e-3) r.add("GPU start-up", "gpu0", w.seconds(), "CUDA context");
  const int threads = o.threads > 0 ? o.threads : default_threads();
  w.reset();
  gpu::DeviceBuffer<char> d(n);
  gpu::Stream s;
  r.add("device text buffer", "gpu0", w.seconds(), gpu::format("{} bytes", n));
  w.reset();
  // Each pinned slot filled by reading its pieces of the files straight into it.
  fill_to_device(d.data(), n, s, {}, [&](char* slot, std::size_t off, std::size_t len) {
    joined.split(
        off, len,
        [&](std::size_t file, std::uint64_t at, std::uint64_t to, std::uint64_t bytes) {
          files[file].read(slot + to, bytes, at, threads);
        },
        [&](std::uint64_t to) { slot[to] = '\n'; });
  });
  r.add("read + H2D text", gpu::format("cpu x{} + gpu0", threads), w.seconds(),
        gpu::format("{} file{}, {} bytes, {} GB/s", files.size(), files.size() == 1 ? "" : "s", n,
                    std::round(n / std::max(w.seconds(), 1e-9) / 1e8) / 10));
  if (lowercase) {
    w.reset();
    k_lower_ascii<<<gpu::grid_for(n / 16 + 1, 256, 4096), 256, 0, s>>>(d.data(), n);
    TANDEM_CUDA(cudaGetLastError());
    s.sync();
    r.add("lowercase", "gpu0", w.seconds(), gpu::format("{} bytes", n));
  }
  return count_words(d.data(), n, o, st, r);
}

}  // namespace tandem::mapreduce::detail
