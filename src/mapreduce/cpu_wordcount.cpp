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

void sort_out_words(const char* text, std::vector<OutWord>& v) { std::sort(v.begin(), v.end(), out_word_less(text)); }

// Each thread counts the chunks it takes (handed out one at a time) into its own table.
std::vector<std::unique_ptr<WordTable>> count_chunks(std::string_view text, int threads, std::size_t chunk,
                                                     CpuWordCountStats& st) {
  const std::size_t n = text.size(), chunks = (n + chunk - 1) / chunk;
  std::vector<std::unique_ptr<WordTable>> tables(threads);
  std::vector<std::uint64_t> words(threads, 0);
  std::atomic<std::size_t> next{0};
  run_threads(threads, [&](int t) {
    auto table = std::make_unique<WordTable>(text.data(), n, std::size_t{1} << 13);
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

// Hash range p of every thread table, merged by one thread: the distinct words of that range,
// sorted.
std::vector<OutWord> merge_range(std::string_view text, const std::vector<std::unique_ptr<WordTable>>& tables,
                                 std::size_t p, std::size_t parts) {
  std::vector<OutWord> out;
  auto collect = [&](const WordTable& t) {
    out.reserve(t.size());
    for (std::size_t i = 0; i < t.capacity(); ++i)
      if (t.slot(i).count) out.push_back(out_word(text.data(), t.slot(i)));
  };
  if (tables.size() == 1) {
    collect(*tables[0]);  // one table: nothing to merge
  } else {
    std::size_t most = 0;
    for (const auto& t : tables) most = std::max(most, t->size());
    WordTable merged(text.data(), text.size(), std::bit_ceil(std::max<std::size_t>(16, 2 * most / parts + 2)),
                     std::countr_zero(parts));
    for (const auto& t : tables)
      t->for_each_in_range(p, parts,
                           [&](const WordSlot& s, std::uint64_t h) { merged.add(s.key, h, s.offset, s.count); });
    collect(merged);
  }
  sort_out_words(text.data(), out);
  return out;
}

// Sorted runs merged pairwise, the pairs of a round on different threads, into one sorted run.
std::vector<OutWord> merge_runs(const char* text, std::vector<std::vector<OutWord>> runs, int threads) {
  const auto less = out_word_less(text);
  while (runs.size() > 1) {
    const std::size_t pairs = runs.size() / 2;
    std::vector<std::vector<OutWord>> next((runs.size() + 1) / 2);
    std::atomic<std::size_t> take{0};
    run_threads(std::min<int>(threads, static_cast<int>(pairs)), [&](int) {
      for (std::size_t i = take++; i < pairs; i = take++) {
        const auto &a = runs[2 * i], &b = runs[2 * i + 1];
        next[i].resize(a.size() + b.size());
        std::merge(a.begin(), a.end(), b.begin(), b.end(), next[i].begin(), less);
      }
    });
    if (runs.size() % 2) next.back() = std::move(runs.back());
    runs = std::move(next);
  }
  return runs.empty() ? std::vector<OutWord>{} : std::move(runs[0]);
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

  Stopwatch w;
  const auto tables = count_chunks(text, T, chunk, st);
  st.count_seconds = w.seconds();

  w.reset();
  // Hash ranges: a few per thread so that a slow thread holds up little; one table: one range.
  const std::size_t parts = T == 1 ? 1 : std::bit_ceil(std::size_t(T) * 4);
  st.partitions = T == 1 ? 0 : parts;
  std::vector<std::vector<OutWord>> ranges(parts);
  std::atomic<std::size_t> next{0};
  run_threads(T, [&](int) {
    for (std::size_t p = next++; p < parts; p = next++) ranges[p] = merge_range(text, tables, p, parts);
  });
  st.merge_seconds = w.seconds();

  w.reset();
  const std::vector<OutWord> all = merge_runs(text.data(), std::move(ranges), T);
  const std::size_t distinct = all.size();
  std::vector<std::pair<std::string, std::uint64_t>> out(distinct);
  run_threads(T, [&](int t) {
    const std::size_t b = distinct * t / T, e = distinct * (t + 1) / T;
    for (std::size_t i = b; i < e; ++i) out[i] = {std::string(text.substr(all[i].offset, all[i].len)), all[i].count};
  });
  st.output_seconds = w.seconds();
  return out;
}

}  // namespace tandem::mapreduce::detail
