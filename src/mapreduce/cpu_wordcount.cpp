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

// One thread's counting: the chunks it takes (handed out one at a time) into its table; returns
// how many words it counted.
template <WordMaskFn Mask>
std::uint64_t count_taken_chunks(WordTable& table, std::string_view text, std::size_t chunk, std::size_t chunks,
                                 std::atomic<std::size_t>& next) {
  const std::size_t n = text.size();
  std::uint64_t words = 0;
  for (std::size_t c = next++; c < chunks; c = next++)
    scan_words<Mask>(text.data(), n, c * chunk, std::min(n, (c + 1) * chunk), [&](std::size_t b, std::size_t len) {
      table.add_word(b, len);
      ++words;
    });
  return words;
}

#if TANDEM_WORD_MASK_AVX2
// The same built for AVX2 and BMI2 (three-operand vector instructions, shifts by a register
// without flags), with the AVX2 classifier; flatten inlines the loop's callees into this target.
[[gnu::target("avx2,bmi,bmi2"), gnu::flatten]] std::uint64_t count_taken_chunks_avx2(
    WordTable& table, std::string_view text, std::size_t chunk, std::size_t chunks, std::atomic<std::size_t>& next) {
  return count_taken_chunks<word_mask64_avx2>(table, text, chunk, chunks, next);
}
#endif

std::uint64_t count_taken_chunks(WordScanIsa isa, WordTable& table, std::string_view text, std::size_t chunk,
                                 std::size_t chunks, std::atomic<std::size_t>& next) {
#if TANDEM_WORD_MASK_AVX2
  if (isa == WordScanIsa::avx2) return count_taken_chunks_avx2(table, text, chunk, chunks, next);
#endif
  (void)isa;
  return count_taken_chunks<word_mask64>(table, text, chunk, chunks, next);
}

// Each thread counts the chunks it takes into its own table.
std::vector<std::unique_ptr<WordTable>> count_chunks(std::string_view text, int threads, std::size_t chunk,
                                                     std::size_t slots, CpuWordCountStats& st) {
  const std::size_t n = text.size(), chunks = (n + chunk - 1) / chunk;
  std::vector<std::unique_ptr<WordTable>> tables(threads);
  std::vector<std::uint64_t> words(threads, 0);
  std::atomic<std::size_t> next{0};
  run_threads(threads, [&](int t) {
    auto table = std::make_unique<WordTable>(text.data(), n, slots);
    words[t] = count_taken_chunks(st.isa, *table, text, chunk, chunks, next);
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

// Hash range p of every thread table merged into one table by one thread. The table is sized for
// twice the largest thread table's share of the range (threads of the same text share most of
// their words) at half load, so that it seldom grows.
WordTable merge_range(std::string_view text, const std::vector<std::unique_ptr<WordTable>>& tables, std::size_t p,
                      std::size_t parts) {
  std::size_t most = 0;
  for (const auto& t : tables) most = std::max(most, t->size());
  WordTable merged(text.data(), text.size(), std::bit_ceil(std::max<std::size_t>(16, 4 * most / parts + 2)),
                   std::countr_zero(parts));
  for (const auto& t : tables)
    t->for_each_in_range(p, parts,
                         [&](const WordSlot& s, std::uint64_t h) { merged.add(s.key, h, s.offset, s.count); });
  return merged;
}

// The words of `t` as records, sorted.
std::vector<OutWord> sorted_records(const char* text, const WordTable& t) {
  std::vector<OutWord> out;
  out.reserve(t.size());
  for (std::size_t i = 0; i < t.capacity(); ++i)
    if (t.slot(i).count) out.push_back(out_word(text, t.slot(i)));
  std::sort(out.begin(), out.end(), out_word_less(text));
  return out;
}

// Records that split the sorted runs into `buckets` parts of about equal size, ascending: samples
// taken evenly from every run (16 per bucket over all), sorted, every 16th kept.
std::vector<OutWord> bucket_splitters(const char* text, const std::vector<std::vector<OutWord>>& runs,
                                      std::size_t total, std::size_t buckets) {
  constexpr std::size_t kOversample = 16;
  const std::size_t step = std::max<std::size_t>(1, total / (buckets * kOversample));
  std::vector<OutWord> samples;
  for (const auto& r : runs)
    for (std::size_t i = step / 2; i < r.size(); i += step) samples.push_back(r[i]);
  std::sort(samples.begin(), samples.end(), out_word_less(text));
  std::vector<OutWord> split;
  for (std::size_t b = 1; b < buckets && !samples.empty(); ++b) split.push_back(samples[b * samples.size() / buckets]);
  return split;
}

// `v` holds sorted runs between consecutive `bounds` (bounds[0] = 0): merged pairwise in rounds
// into one sorted run, `tmp` the other buffer — the runs' order is used, not sorted again. An odd
// run out is merged with an empty one.
template <class Less>
void merge_sorted_runs(std::vector<OutWord>& v, std::vector<OutWord>& tmp, std::vector<std::size_t>& bounds,
                       const Less& less) {
  tmp.resize(v.size());
  std::vector<std::size_t> merged;
  while (bounds.size() > 2) {
    merged.assign(1, 0);
    for (std::size_t i = 0; i + 1 < bounds.size(); i += 2) {
      const std::size_t lo = bounds[i], mid = bounds[i + 1], hi = i + 2 < bounds.size() ? bounds[i + 2] : mid;
      std::merge(v.begin() + lo, v.begin() + mid, v.begin() + mid, v.begin() + hi, tmp.begin() + lo, less);
      merged.push_back(hi);
    }
    v.swap(tmp);
    bounds.swap(merged);
  }
}

}  // namespace

WordScanIsa best_word_scan_isa() {
#if TANDEM_WORD_MASK_AVX2
  if (cpu_has_avx2()) return WordScanIsa::avx2;
#endif
  return WordScanIsa::baseline;
}

std::size_t word_chunk_bytes(std::size_t bytes, int threads) {
  const std::size_t want = bytes / (std::size_t(std::max(1, threads)) * 16);
  return std::clamp<std::size_t>(want, std::size_t{64} << 10, std::size_t{1} << 20);
}

std::vector<std::pair<std::string, std::uint64_t>> cpu_wordcount(std::string_view text, int threads,
                                                                 std::size_t chunk_bytes, CpuWordCountStats& st,
                                                                 WordScanIsa isa) {
  st = {};
  st.isa = isa;
  const std::size_t n = text.size();
  const std::size_t chunk = chunk_bytes ? chunk_bytes : word_chunk_bytes(n, threads);
  const int T = static_cast<int>(std::clamp<std::size_t>((n + chunk - 1) / chunk, 1, std::max(1, threads)));
  st.threads = T;
  st.chunk_bytes = chunk;

  // Hash ranges merged in parallel: a few per thread so that a slow thread holds up little.
  const std::size_t parts = T == 1 ? 1 : std::bit_ceil(std::size_t(T) * 4);
  st.partitions = T == 1 ? 0 : parts;

  Stopwatch w;
  // Thread tables start at a slot per 32 bytes of the thread's share (1,024 to 131,072, 4 MiB; a
  // range needs a slot at least): text has far fewer distinct words than that, so they seldom
  // grow, and the larger ones come from the zeroed-block pool already faulted in.
  const std::size_t slots =
      std::max(parts, std::clamp<std::size_t>(std::bit_ceil(n / std::size_t(T) / 32 + 1), 1024, 131072));
  auto tables = count_chunks(text, T, chunk, slots, st);
  st.count_seconds = w.seconds();

  // Each hash range merged over the thread tables and its records sorted: one sorted run per
  // range (one thread: the thread's table is the one run).
  w.reset();
  std::vector<std::vector<OutWord>> runs(T > 1 ? parts : 1);
  if (T > 1) {
    std::atomic<std::size_t> next{0}, grows{0};
    run_threads(T, [&](int) {
      for (std::size_t p = next++; p < parts; p = next++) {
        const WordTable merged = merge_range(text, tables, p, parts);
        grows += merged.grows();
        runs[p] = sorted_records(text.data(), merged);
      }
    });
    st.merge_grows = grows;
  } else {
    runs[0] = sorted_records(text.data(), *tables[0]);
  }
  st.merge_seconds = w.seconds();

  // The runs split by sampled records into buckets, every bucket's share of every run found by
  // binary search, then each bucket's pieces merged and made strings at their place in the output
  // (a parallel sample sort: no merge rounds over all words, no sequential last merge).
  w.reset();
  std::size_t distinct = 0;
  for (const auto& r : runs) distinct += r.size();
  const std::size_t buckets = T > 1 ? std::size_t(T) * 4 : 1;
  const std::vector<OutWord> split = bucket_splitters(text.data(), runs, distinct, buckets);
  const std::size_t B = split.size() + 1;
  const auto less = out_word_less(text.data());
  // cut[r * (B + 1) + b]: where bucket b begins in run r.
  std::vector<std::size_t> cut(runs.size() * (B + 1));
  std::atomic<std::size_t> next_run{0}, next_table{0};
  run_threads(T, [&](int) {
    // The thread tables are done with: cleared for the pool on all threads, not by the caller.
    for (std::size_t t = next_table++; t < tables.size(); t = next_table++) tables[t].reset();
    for (std::size_t r = next_run++; r < runs.size(); r = next_run++) {
      std::size_t* c = &cut[r * (B + 1)];
      c[0] = 0;
      for (std::size_t b = 1; b < B; ++b)
        c[b] = static_cast<std::size_t>(
            std::lower_bound(runs[r].begin() + c[b - 1], runs[r].end(), split[b - 1], less) - runs[r].begin());
      c[B] = runs[r].size();
    }
  });
  std::vector<std::size_t> start(B + 1, 0);
  for (std::size_t b = 0; b < B; ++b) {
    start[b + 1] = start[b];
    for (std::size_t r = 0; r < runs.size(); ++r) start[b + 1] += cut[r * (B + 1) + b + 1] - cut[r * (B + 1) + b];
  }
  std::vector<std::pair<std::string, std::uint64_t>> out(distinct);
  std::atomic<std::size_t> next_bucket{0};
  run_threads(T, [&](int) {
    std::vector<OutWord> mine, tmp;
    std::vector<std::size_t> bounds;
    for (std::size_t b = next_bucket++; b < B; b = next_bucket++) {
      mine.clear();
      bounds.assign(1, 0);
      for (std::size_t r = 0; r < runs.size(); ++r) {
        mine.insert(mine.end(), runs[r].begin() + cut[r * (B + 1) + b], runs[r].begin() + cut[r * (B + 1) + b + 1]);
        bounds.push_back(mine.size());
      }
      merge_sorted_runs(mine, tmp, bounds, less);
      for (std::size_t i = 0; i < mine.size(); ++i)
        out[start[b] + i] = {std::string(text.substr(mine[i].offset, mine[i].len)), mine[i].count};
    }
  });
  st.output_seconds = w.seconds();
  return out;
}

}  // namespace tandem::mapreduce::detail
