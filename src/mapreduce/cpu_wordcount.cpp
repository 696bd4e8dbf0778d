#include "mapreduce/cpu_wordcount.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <memory>

#include "mapreduce/word_scan.hpp"
#include "mapreduce/word_table.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::mapreduce::detail {

namespace {

// A distinct word in output order: count descending, then bytes ascending; `prefix` is its first
// 8 bytes big-endian (zero-padded), which orders most pairs without reading the text.
struct OutWord {
  std::uint64_t count;
  std::uint64_t prefix;
  std::uint64_t offset;
  std::uint64_t len;
};

OutWord out_word(const char* text, const WordSlot& s) {
  const std::size_t len = s.key.length();
  std::uint64_t first8 = s.key.k0;  // a long word's first 8 bytes are in the text
  if (!s.key.is_short()) std::memcpy(&first8, text + s.offset, 8);
  return {s.count, __builtin_bswap64(first8), s.offset, len};
}

auto out_word_less(const char* text) {
  return [text](const OutWord& a, const OutWord& b) {
    if (a.count != b.count) return a.count > b.count;
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return std::string_view(text + a.offset, a.len) < std::string_view(text + b.offset, b.len);
  };
}

// Each thread counts the chunks it takes (handed out one at a time) into its own table.
std::vector<std::unique_ptr<WordTable>> count_chunks(std::string_view text, int threads, std::size_t chunk,
                                                     std::size_t slots, CpuWordCountStats& st) {
  const std::size_t n = text.size(), chunks = (n + chunk - 1) / chunk;
  std::vector<std::unique_ptr<WordTable>> tables(threads);
  std::vector<std::uint64_t> words(threads, 0);
  std::atomic<std::size_t> next{0};
  run_threads(threads, [&](int t) {
    auto table = std::make_unique<WordTable>(text.data(), n, slots);
    std::uint64_t my_words = 0;
    for (std::size_t c = next++; c < chunks; c = next++)
      scan_words(text.data(), n, c * chunk, std::min(n, (c + 1) * chunk), [&](std::size_t b, std::size_t len) {
        table->add_word(b, len);
        ++my_words;
      });
    words[t] = my_words;
    tables[t] = std::move(table);
  });
  st.chunks = chunks;
  for (int t = 0; t < threads; ++t) {
    st.words += words[t];
    st.table_slots = std::max(st.table_slots, tables[t]->capacity());
    st.table_grows += tables[t]->grows();
  }
  return tables;
}

// Hash range p of every thread table merged into one table by one thread (one thread table: that
// table, nothing to merge).
std::unique_ptr<WordTable> merge_range(std::string_view text, const std::vector<std::unique_ptr<WordTable>>& tables,
                                       std::size_t p, std::size_t parts) {
  std::size_t most = 0;
  for (const auto& t : tables) most = std::max(most, t->size());
  auto merged = std::make_unique<WordTable>(text.data(), text.size(),
                                            std::bit_ceil(std::max<std::size_t>(16, 2 * most / parts + 2)),
                                            std::countr_zero(parts));
  for (const auto& t : tables)
    t->for_each_in_range(p, parts,
                         [&](const WordSlot& s, std::uint64_t h) { merged->add(s.key, h, s.offset, s.count); });
  return merged;
}

// The words of `t` as records at `out`, sorted.
void sorted_records(const char* text, const WordTable& t, OutWord* out) {
  OutWord* o = out;
  for (std::size_t i = 0; i < t.capacity(); ++i)
    if (t.slot(i).count) *o++ = out_word(text, t.slot(i));
  std::sort(out, o, out_word_less(text));
}

// Sorted runs [bounds[i], bounds[i + 1]) of `a` merged pairwise, the pairs of a round on different
// threads, between `a` and `b`; returns the buffer that holds the one sorted run.
OutWord* merge_runs(const char* text, OutWord* a, OutWord* b, std::vector<std::size_t> bounds, int threads) {
  const auto less = out_word_less(text);
  while (bounds.size() > 2) {
    const std::size_t runs = bounds.size() - 1, pairs = (runs + 1) / 2;  // an odd last run is copied
    std::atomic<std::size_t> take{0};
    run_threads(std::min<int>(threads, static_cast<int>(pairs)), [&](int) {
      for (std::size_t i = take++; i < pairs; i = take++) {
        const std::size_t lo = bounds[2 * i], mid = bounds[std::min(2 * i + 1, runs)],
                          hi = bounds[std::min(2 * i + 2, runs)];
        std::merge(a + lo, a + mid, a + mid, a + hi, b + lo, less);
      }
    });
    std::vector<std::size_t> next;
    for (std::size_t i = 0; i < bounds.size(); i += 2) next.push_back(bounds[i]);
    if (next.back() != bounds.back()) next.push_back(bounds.back());
    bounds = std::move(next);
    std::swap(a, b);
  }
  return a;
}

}  // namespace

std::size_t word_chunk_bytes(std::size_t bytes, int threads) {
  const std::size_t want = bytes / (std::size_t(std::max(1, threads)) * 16);
  return std::clamp<std::size_t>(want, std::size_t{64} << 10, std::size_t{1} << 20);
}

std::vector<std::pair<std::string, std::uint64_t>> cpu_wordcount(std::string_view text, int threads,
                                                                 std::size_t chunk_bytes, CpuWordCountStats& st) {
  st = {};
  const std::size_t n = text.size();
  const std::size_t chunk = chunk_bytes ? chunk_bytes : word_chunk_bytes(n, threads);
  const int T = static_cast<int>(std::clamp<std::size_t>((n + chunk - 1) / chunk, 1, std::max(1, threads)));
  st.threads = T;
  st.chunk_bytes = chunk;

  // Hash ranges merged in parallel: a few per thread so that a slow thread holds up little.
  const std::size_t parts = T == 1 ? 1 : std::bit_ceil(std::size_t(T) * 4);
  st.partitions = T == 1 ? 0 : parts;

  Stopwatch w;
  // Thread tables start at a slot per 64 bytes of the thread's share (1,024 to 65,536; a range
  // needs a slot at least): text has far fewer distinct words than that, so they grow seldom.
  const std::size_t slots =
      std::max(parts, std::clamp<std::size_t>(std::bit_ceil(n / std::size_t(T) / 64 + 1), 1024, 65536));
  const auto tables = count_chunks(text, T, chunk, slots, st);
  st.count_seconds = w.seconds();

  w.reset();
  std::vector<std::unique_ptr<WordTable>> merged(parts);
  if (T > 1) {
    std::atomic<std::size_t> next{0};
    run_threads(T, [&](int) {
      for (std::size_t p = next++; p < parts; p = next++) merged[p] = merge_range(text, tables, p, parts);
    });
  }
  const auto range_table = [&](std::size_t p) -> const WordTable& { return T > 1 ? *merged[p] : *tables[0]; };
  // Each range's records sorted in place in one buffer, then the ranges merged.
  std::vector<std::size_t> bounds(parts + 1, 0);
  for (std::size_t p = 0; p < parts; ++p) bounds[p + 1] = bounds[p] + range_table(p).size();
  const std::size_t distinct = bounds.back();
  std::unique_ptr<OutWord[]> buf_a(new OutWord[distinct]), buf_b(new OutWord[distinct]);  // written before read
  std::atomic<std::size_t> next{0};
  run_threads(T, [&](int) {
    for (std::size_t p = next++; p < parts; p = next++) {
      sorted_records(text.data(), range_table(p), buf_a.get() + bounds[p]);
      if (T > 1) merged[p].reset();
    }
  });
  st.merge_seconds = w.seconds();

  w.reset();
  const OutWord* all = merge_runs(text.data(), buf_a.get(), buf_b.get(), std::move(bounds), T);
  std::vector<std::pair<std::string, std::uint64_t>> out(distinct);
  constexpr std::size_t kBlock = 4096;  // words per piece of the strings' work, taken as threads come
  std::atomic<std::size_t> piece{0};
  run_threads(T, [&](int) {
    for (std::size_t b = piece++ * kBlock; b < distinct; b = piece++ * kBlock)
      for (std::size_t i = b; i < std::min(distinct, b + kBlock); ++i)
        out[i] = {std::string(text.substr(all[i].offset, all[i].len)), all[i].count};
  });
  st.output_seconds = w.seconds();
  return out;
}

}  // namespace tandem::mapreduce::detail
