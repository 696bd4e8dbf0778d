#include "mapreduce/cpu_wordcount.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>

#include "mapreduce/word_order.hpp"
#include "mapreduce/word_scan.hpp"
#include "mapreduce/word_table.hpp"
#include "sort/cpu_radix.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::mapreduce::detail {

namespace {

// Each thread's start and end in a stage, from the stage's start, summed up as StageThreads.
class ThreadClock {
 public:
  explicit ThreadClock(int threads) : spans_(std::size_t(threads), {-1, -1}) {}
  void start(int t) { spans_[std::size_t(t)].first = w_.seconds(); }
  void end(int t) { spans_[std::size_t(t)].second = w_.seconds(); }
  StageThreads summary() const {
    StageThreads s;
    int ran = 0;
    for (const auto& [b, e] : spans_) {
      if (b < 0) continue;  // a thread OpenMP did not start
      s.last_start = std::max(s.last_start, b);
      s.longest = std::max(s.longest, e - b);
      s.mean += e - b;
      ++ran;
    }
    if (ran) s.mean /= ran;
    return s;
  }

 private:
  Stopwatch w_;
  std::vector<std::pair<double, double>> spans_;
};

// A distinct word in output order: count descending, then bytes ascending. `rank` is the count's
// complement and `prefix` and `second` the word's bytes 0..7 and 8..15 big-endian (zero-padded), so
// that (rank, prefix) as one 128-bit number orders most pairs with one comparison, and `second`
// most of the rest, without reading the word: a word of at most 16 bytes needs no other bytes,
// and a longer one's are at `bytes`.
struct OutWord {
  std::uint64_t rank;
  std::uint64_t prefix;
  std::uint64_t second;
  std::uint64_t len;
  const char* bytes;
  std::uint64_t count() const { return ~rank; }
};

OutWord out_word(const WordKey& key, std::uint64_t count, const char* bytes) {
  const std::size_t len = key.length();
  if (key.is_short()) return {~count, __builtin_bswap64(key.k0), __builtin_bswap64(key.k1), len, nullptr};
  std::uint64_t b0, b1;  // a long word (more than 16 bytes): its first 16 from its bytes
  std::memcpy(&b0, bytes, 8);
  std::memcpy(&b1, bytes + 8, 8);
  return {~count, __builtin_bswap64(b0), __builtin_bswap64(b1), len, bytes};
}

// The word's bytes: from the record when it holds them (into buf, 16 bytes), else where they are.
std::string_view word_bytes(const OutWord& w, char* buf) {
  if (w.len > kShortWord) return {w.bytes, w.len};
  const std::uint64_t b0 = __builtin_bswap64(w.prefix), b1 = __builtin_bswap64(w.second);
  std::memcpy(buf, &b0, 8);
  std::memcpy(buf + 8, &b1, 8);
  return {buf, w.len};
}

auto out_word_less() {
  return [](const OutWord& a, const OutWord& b) {
    using U128 = unsigned __int128;
    const U128 ka = U128(a.rank) << 64 | a.prefix, kb = U128(b.rank) << 64 | b.prefix;
    if (ka != kb) [[likely]]
      return ka < kb;
    // Zero-padded bytes compare as the words do: a word has no zero byte.
    if (a.second != b.second) return a.second < b.second;
    if (a.len <= kShortWord && b.len <= kShortWord) return false;  // the same 16 bytes or fewer
    char abuf[16], bbuf[16];
    return word_bytes(a, abuf) < word_bytes(b, bbuf);
  };
}

// One thread's counts: words of at most kInlineWord bytes (most words) in 16-byte slots, longer
// ones in 32-byte slots; the bytes of words beyond 16 that recur are copied once. With several
// threads each drains its tables by hash range when its counting is done (drain).
struct ThreadTables {
  // parts: the hash ranges the tables will be drained into (1: none).
  ThreadTables(std::string_view text, std::size_t inline_slots, std::size_t long_slots, std::size_t parts)
      : long_copies(text), inline_words(inline_slots), long_words(long_slots, 0, 3, &long_copies) {
    if (parts > 1) {  // counted as words come in: the drain makes one pass, not two
      inline_words.count_ranges(parts);
      long_words.count_ranges(parts);
    }
  }
  std::size_t size() const {
    return inline_words.size() + long_words.size() + inline_ranges.size() + long_ranges.size();
  }
  // The slots into this core's cache before counting. They are reused blocks, but a core that was
  // idle before the call has lost its cache, and the lines missed one lookup at a time cost a
  // 16-thread count after idle about 0.5 ms more than this stream of requests (H200 host).
  void prefetch() const {
    inline_words.prefetch_slots();
    long_words.prefetch_slots();
  }
  void drain(std::size_t parts) {
    inline_ranges = inline_words.drain_by_range(parts);
    long_ranges = long_words.drain_by_range(parts);
  }
  // Gives the drained tables' slots back (their words are in the ranges); the copies of long words
  // stay until the result's strings are made.
  void release_slots() {
    inline_words.release_drained();
    long_words.release_drained();
  }
  WordCopies long_copies;  // before long_words, which keeps a pointer to it
  InlineWordTable inline_words;
  WordTable long_words;
  RangedWords<InlineSlot> inline_ranges{nullptr, {0}};
  RangedWords<WordSlot> long_ranges{nullptr, {0}};
};

// One thread's counting: the chunks it takes (handed out one at a time) into its tables; returns
// how many words it counted. Inline: words of at most kInlineWord bytes go to the inline table.
template <WordMaskFn Mask, bool Inline>
std::uint64_t count_taken_chunks(ThreadTables& t, std::string_view text, std::size_t chunk, std::size_t chunks,
                                 std::atomic<std::size_t>& next) {
  const char* p = text.data();
  const std::size_t n = text.size();
  std::uint64_t words = 0;
  for (std::size_t c = next++; c < chunks; c = next++)
    scan_words<Mask>(
        p, n, c * chunk, std::min(n, (c + 1) * chunk), [&](std::size_t b, std::size_t len, auto readable16) {
          if (Inline && len <= kInlineWord) [[likely]] {
            const WordKey k = decltype(readable16)::value ? short_word_key(p + b, len) : word_key(p, n, b, len);
            t.inline_words.add(k.k0, k.k1);
          } else {
            const WordKey k = word_key(p, n, b, len);
            t.long_words.add(k, k.hash(), p + b);
          }
          ++words;
        });
  return words;
}

// The counting loop for this ISA. 40-bit inline counts hold any thread's count of a text below
// kInlineMaxText bytes; beyond it every word goes to the long table.
template <WordMaskFn Mask>
std::uint64_t count_taken_chunks(ThreadTables& t, std::string_view text, std::size_t chunk, std::size_t chunks,
                                 std::atomic<std::size_t>& next) {
  if (text.size() < kInlineMaxText) [[likely]]
    return count_taken_chunks<Mask, true>(t, text, chunk, chunks, next);
  return count_taken_chunks<Mask, false>(t, text, chunk, chunks, next);
}

#if TANDEM_WORD_MASK_AVX2
// The same built for AVX2 and BMI2 (three-operand vector instructions, shifts by a register
// without flags), with the AVX2 classifier; flatten inlines the loop's callees into this target.
[[gnu::target("avx2,bmi,bmi2"), gnu::flatten]] std::uint64_t count_taken_chunks_avx2(
    ThreadTables& t, std::string_view text, std::size_t chunk, std::size_t chunks, std::atomic<std::size_t>& next) {
  return count_taken_chunks<word_mask64_avx2>(t, text, chunk, chunks, next);
}
#endif

std::uint64_t count_taken_chunks(WordScanIsa isa, ThreadTables& t, std::string_view text, std::size_t chunk,
                                 std::size_t chunks, std::atomic<std::size_t>& next) {
#if TANDEM_WORD_MASK_AVX2
  if (isa == WordScanIsa::avx2) return count_taken_chunks_avx2(t, text, chunk, chunks, next);
#endif
  (void)isa;
  return count_taken_chunks<word_mask64>(t, text, chunk, chunks, next);
}

// Each thread counts the chunks it takes into its own tables, then drains them into `parts` hash
// ranges (none with one thread: its tables are the result).
std::vector<std::unique_ptr<ThreadTables>> count_chunks(std::string_view text, int threads, std::size_t chunk,
                                                        std::size_t inline_slots, std::size_t long_slots,
                                                        std::size_t parts, CpuWordCountStats& st) {
  const std::size_t n = text.size(), chunks = (n + chunk - 1) / chunk;
  std::vector<std::unique_ptr<ThreadTables>> tables(threads);
  std::vector<std::uint64_t> words(threads, 0);
  std::atomic<std::size_t> next{0};
  ThreadClock clock(threads);
  run_threads(threads, [&](int t) {
    clock.start(t);
    auto mine = std::make_unique<ThreadTables>(text, inline_slots, long_slots, parts);
    mine->prefetch();
    words[t] = count_taken_chunks(st.isa, *mine, text, chunk, chunks, next);
    if (parts > 1) mine->drain(parts);
    tables[t] = std::move(mine);
    clock.end(t);
  });
  st.count_threads = clock.summary();
  std::erase(tables, nullptr);  // threads OpenMP did not start (none took a chunk)
  st.chunks = chunks;
  for (const std::uint64_t w : words) st.words += w;
  for (const auto& t : tables) {
    st.table_slots = std::max(st.table_slots, t->inline_words.capacity() + t->long_words.capacity());
    st.table_bytes = std::max(
        st.table_bytes, t->inline_words.capacity() * sizeof(InlineSlot) + t->long_words.capacity() * sizeof(WordSlot));
    st.table_grows += t->inline_words.grows() + t->long_words.grows();
  }
  return tables;
}

// Long words are compared on their copies, made on other cores: a merge asks for a long word's
// bytes this many records before it adds it, so the compare finds them in cache.
constexpr std::size_t kBytesAhead = 8;

// Hash range p of every thread's tables merged into one table by one thread, at half load for an
// estimate of the words all threads have: the largest thread's words times 1 + log2(threads) / 2
// (threads of one text share most of their words; measured on real text: 1.1 times at 2 threads,
// 2.7 times at 16), at most all the threads' words.
WordTable merge_range(const std::vector<std::unique_ptr<ThreadTables>>& tables, std::size_t p, std::size_t parts) {
  std::size_t most = 0, sum = 0;
  for (const auto& t : tables) {
    most = std::max(most, t->size());
    sum += t->size();
  }
  const std::size_t words = std::min(sum, most + most * std::bit_width(tables.size() - 1) / 2);
  WordTable merged(std::bit_ceil(std::max<std::size_t>(16, 2 * words / parts + 2)), std::countr_zero(parts));
  // Every thread's words of this range were drained on its own core: asked for all at once, and
  // the merged table's slots too, where a line at a time would each wait on its own.
  merged.prefetch_slots();
  for (const auto& t : tables) {
    for (const auto words : {std::as_bytes(t->inline_ranges.range(p)), std::as_bytes(t->long_ranges.range(p))})
      prefetch_lines(words.data(), words.size());
  }
  for (const auto& t : tables) {
    for (const InlineSlot& s : t->inline_ranges.range(p)) merged.add_short(s.key(), s.hash(), s.count());
    const std::span<const WordSlot> longs = t->long_ranges.range(p);
    for (std::size_t i = 0; i < longs.size(); ++i) {
      if (i + kBytesAhead < longs.size()) __builtin_prefetch(longs[i + kBytesAhead].bytes);
      merged.add(longs[i].key, longs[i].hash(), longs[i].bytes, longs[i].count);
    }
  }
  return merged;
}

// Records in print order with their word_order_keys.
struct SortedWords {
  std::vector<OutWord> words;
  std::vector<std::uint64_t> keys;
  std::size_t size() const { return words.size(); }
};

// Sorts s.words (s.keys[i] their word_order_keys) into print order: a radix sort of the keys, then
// each run of equal keys by out_word_less. Sorting the records by their branchy comparisons alone
// took 65 ns a word on the development VM (46,571 distinct words), most of the merge stage.
void sort_in_print_order(SortedWords& s) {
  const std::size_t n = s.size();
  if (n > std::numeric_limits<std::uint32_t>::max()) {  // more words than the radix sort's indices hold
    std::sort(s.words.begin(), s.words.end(), out_word_less());
    for (std::size_t i = 0; i < n; ++i) s.keys[i] = word_order_key(s.words[i].count(), s.words[i].prefix);
    return;
  }
  std::vector<std::uint32_t> at(n);
  std::iota(at.begin(), at.end(), 0u);
  tandem::detail::cpu_radix_sort<std::uint64_t, std::uint32_t>(s.keys, at, false, 1);
  std::vector<OutWord> sorted(n);
  for (std::size_t i = 0; i < n; ++i) sorted[i] = s.words[at[i]];
  const auto less = out_word_less();
  for (std::size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && s.keys[j] == s.keys[i];) ++j;
    if (j - i > 1) std::sort(sorted.begin() + i, sorted.begin() + j, less);
  }
  s.words.swap(sorted);
}

// The words of the tables as records, sorted.
SortedWords sorted_records(const WordTable& t, const InlineWordTable* inline_words) {
  // Every slot written, an empty one over by the next (no branch on whether a slot is used: about
  // half are, at random).
  SortedWords out;
  out.words.resize(t.size() + (inline_words ? inline_words->size() : 0) + 1);
  std::size_t n = 0;
  for (std::size_t i = 0; i < t.capacity(); ++i) {
    const WordSlot& s = t.slot(i);
    out.words[n] = out_word(s.key, s.count, s.bytes);
    n += s.used();
  }
  if (inline_words)
    for (std::size_t i = 0; i < inline_words->capacity(); ++i) {
      const InlineSlot& s = inline_words->slot(i);
      out.words[n] = out_word(s.key(), s.count(), nullptr);
      n += s.used();
    }
  out.words.resize(n);
  out.keys.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.keys[i] = word_order_key(out.words[i].count(), out.words[i].prefix);
  sort_in_print_order(out);
  return out;
}

// Order keys that split the sorted runs into `buckets` parts of about equal size, ascending:
// samples taken evenly from every run (16 per bucket over all), sorted, every 16th kept. Words of
// one key fall into one bucket.
std::vector<std::uint64_t> bucket_splitters(const std::vector<SortedWords>& runs, std::size_t total,
                                            std::size_t buckets) {
  constexpr std::size_t kOversample = 16;
  const std::size_t step = std::max<std::size_t>(1, total / (buckets * kOversample));
  std::vector<std::uint64_t> samples;
  for (const auto& r : runs)
    for (std::size_t i = step / 2; i < r.size(); i += step) samples.push_back(r.keys[i]);
  std::sort(samples.begin(), samples.end());
  std::vector<std::uint64_t> split;
  for (std::size_t b = 1; b < buckets && !samples.empty(); ++b) split.push_back(samples[b * samples.size() / buckets]);
  return split;
}

// `v` holds sorted runs between consecutive `bounds` (bounds[0] = 0): merged pairwise in rounds
// into one sorted run, `tmp` the other buffer. An odd run out is merged with an empty one.
void merge_sorted_runs(std::vector<OutWord>& v, std::vector<OutWord>& tmp, std::vector<std::size_t>& bounds) {
  const auto less = out_word_less();
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

// A bucket's pieces of up to this many runs are merged (a few rounds of comparisons that mostly
// need no text); from more, sorted again by keys (sort_in_print_order), which costs the same
// however many pieces there are.
constexpr std::size_t kMergedPiecesMax = 8;

// Where the splitters fall in a run's keys: pos[b] is the number of keys below split[b - 1]
// (pos[0] = 0, pos[split.size() + 1] = all), found in one walk along the keys.
void split_positions(const std::vector<std::uint64_t>& keys, const std::vector<std::uint64_t>& split,
                     std::size_t* pos) {
  std::size_t i = 0;
  pos[0] = 0;
  for (std::size_t b = 0; b < split.size(); ++b) {
    while (i < keys.size() && keys[i] < split[b]) ++i;
    pos[b + 1] = i;
  }
  pos[split.size() + 1] = keys.size();
}

// The result's strings for a bucket's sorted words, at their place in it. The elements were made
// on another core: each line is asked for (for writing) a few elements ahead.
void write_strings(const std::vector<OutWord>& words, std::pair<std::string, std::uint64_t>* out) {
  constexpr std::size_t kAhead = 8;
  char buf[16];
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i + kAhead < words.size()) __builtin_prefetch(out + i + kAhead, 1);
    const std::string_view word = word_bytes(words[i], buf);
    out[i].first.assign(word.data(), word.size());  // no string made, moved and destroyed per word
    out[i].second = words[i].count();
  }
}

// The thread tables merged into the result, in print order, on T threads: each hash range merged
// into one table and its words made sorted records (sorted_records) by one thread; the sorted runs
// cut into buckets by sampled order keys (a parallel sample sort: no merge of all runs at the
// end), each bucket's pieces sorted together and made strings at the bucket's place in the result.
std::vector<std::pair<std::string, std::uint64_t>> merge_in_print_order(
    std::vector<std::unique_ptr<ThreadTables>>& tables, int T, std::size_t parts, CpuWordCountStats& st) {
  Stopwatch w;
  std::vector<SortedWords> runs(parts);
  std::atomic<std::size_t> next_range{0}, grows{0};
  ThreadClock merge_clock(T);
  run_threads(T, [&](int t) {
    merge_clock.start(t);
    for (std::size_t p = next_range++; p < parts; p = next_range++) {
      const WordTable merged = merge_range(tables, p, parts);
      grows += merged.grows();
      // Sorted by the thread that merged it, while its lines and the long words' bytes are in cache.
      runs[p] = sorted_records(merged, nullptr);
    }
    merge_clock.end(t);
  });
  st.merge_grows = grows;
  st.merge_threads = merge_clock.summary();
  st.merge_seconds = w.seconds();

  w.reset();
  std::size_t distinct = 0;
  for (const auto& r : runs) distinct += r.size();
  const std::vector<std::uint64_t> split = bucket_splitters(runs, distinct, std::size_t(T) * 4);
  const std::size_t B = split.size() + 1;
  std::vector<std::size_t> pos(parts * (B + 1));  // split_positions of each run
  std::vector<SortedWords> bucket_words(B);
  std::vector<std::size_t> bucket_start(B, 0);
  std::vector<std::pair<std::string, std::uint64_t>> out;
  st.output_serial_seconds = w.seconds();
  std::atomic<std::size_t> next_run{0}, next_bucket{0}, next_write{0};
  ThreadClock output_clock(T);
  // Three regions, not one with barriers: a thread whose allocation fails must not leave the
  // others waiting at a barrier it never reaches.
  run_threads(T, [&](int t) {
    output_clock.start(t);
    // The thread tables' slots are done with: each given back to the pool (already cleared by the
    // drain) by the thread that counted into it (the pool hands its block to that core again).
    if (std::size_t(t) < tables.size()) tables[t]->release_slots();
    for (std::size_t r = next_run++; r < parts; r = next_run++) split_positions(runs[r].keys, split, &pos[r * (B + 1)]);
  });
  run_threads(T, [&](int t) {
    std::vector<OutWord> tmp;
    std::vector<std::size_t> bounds;
    // One thread makes the result's elements (a vector's are made by one thread: 0.14-0.34 ms for
    // 46,571 words on the H200 host) while the others sort the buckets.
    if (t == 0) out.resize(distinct);
    for (std::size_t b = next_bucket++; b < B; b = next_bucket++) {
      std::size_t pieces = 0;
      for (std::size_t r = 0; r < parts; ++r) {
        const std::size_t first = pos[r * (B + 1) + b], last = pos[r * (B + 1) + b + 1];
        bucket_start[b] += first;
        pieces += last != first;
      }
      // Pieces from a few runs are merged, from many sorted again by their keys; one is in order.
      const bool by_keys = pieces > kMergedPiecesMax;
      SortedWords& mine = bucket_words[b];
      bounds.assign(1, 0);
      for (std::size_t r = 0; r < parts; ++r) {
        const std::size_t first = pos[r * (B + 1) + b], last = pos[r * (B + 1) + b + 1];
        if (last == first) continue;
        mine.words.insert(mine.words.end(), runs[r].words.begin() + first, runs[r].words.begin() + last);
        if (by_keys) mine.keys.insert(mine.keys.end(), runs[r].keys.begin() + first, runs[r].keys.begin() + last);
        bounds.push_back(mine.size());
      }
      if (by_keys) sort_in_print_order(mine);
      else if (pieces > 1) merge_sorted_runs(mine.words, tmp, bounds);
    }
  });
  run_threads(T, [&](int t) {
    for (std::size_t b = next_write++; b < B; b = next_write++)
      write_strings(bucket_words[b].words, out.data() + bucket_start[b]);
    output_clock.end(t);
  });
  st.output_threads = output_clock.summary();
  st.output_seconds = w.seconds();
  return out;
}

}  // namespace

WordScanIsa best_word_scan_isa() {
#if TANDEM_WORD_MASK_AVX2
  if (cpu_has_avx2()) return WordScanIsa::avx2;
#endif
  return WordScanIsa::baseline;
}

std::size_t word_chunk_bytes(std::size_t bytes, int threads) {
  // About 32 chunks a thread: the last chunks end close together even when some threads start
  // late (a core back from idle) or run slower.
  const std::size_t want = bytes / (std::size_t(std::max(1, threads)) * 32);
  return std::clamp<std::size_t>(want, std::size_t{32} << 10, std::size_t{1} << 20);
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
  // Thread tables start at an inline slot per 64 bytes of the thread's share and a long word's slot
  // per 128 (1,024 to 65,536 each: 1 and 2 MiB; a range needs a slot at least): text has far fewer
  // distinct words than that, so they seldom grow, and the larger ones come from the zeroed-block
  // pool already faulted in.
  const std::size_t share = n / std::size_t(T);
  const std::size_t inline_slots = std::max(parts, std::clamp<std::size_t>(std::bit_ceil(share / 64 + 1), 1024, 65536));
  const std::size_t long_slots = std::max(parts, std::clamp<std::size_t>(std::bit_ceil(share / 128 + 1), 1024, 65536));
  auto tables = count_chunks(text, T, chunk, inline_slots, long_slots, T > 1 ? parts : 1, st);
  st.count_seconds = w.seconds();

  if (T > 1) return merge_in_print_order(tables, T, parts, st);
  // One thread: its tables are the result, sorted and made strings.
  w.reset();
  const SortedWords run = sorted_records(tables[0]->long_words, &tables[0]->inline_words);
  st.merge_seconds = w.seconds();
  w.reset();
  std::vector<std::pair<std::string, std::uint64_t>> out(run.size());
  write_strings(run.words, out.data());
  st.output_seconds = w.seconds();
  return out;
}

}  // namespace tandem::mapreduce::detail
