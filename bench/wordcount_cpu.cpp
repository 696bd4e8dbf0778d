// Word count on the CPU: tandem::mapreduce::wordcount (device cpu) against the anchor, a single
// pass of the same tokenizer into a std::unordered_map<std::string_view, uint64_t>, on the same
// text in the same run. Both results are checked equal (the anchor's map, sorted as wordcount
// sorts, against wordcount's words); the anchor's time is its counting pass alone (its words are
// neither sorted nor copied into strings, which wordcount's time includes). Rounds alternate the
// two.
//
// Stage lines: the engine's own timers (least of the calls), its CPU time and page faults per call,
// and the median of those calls made back to back as GB/s (the goal lines' calls each follow the
// anchor's quarter second on one thread, with the other cores idle).
//
// Floor lines: every byte read once (the threads' share of memory bandwidth), the tokenizer alone
// on one thread (what `wc -w` does; baseline SSE2, and AVX2 where the CPU has it, as the engine
// uses), then with every word's key and hash, then with one slot of a table of the engine's size
// incremented per word (one memory access, no compare, nothing inserted), so the distance of the
// counting stage to each is visible, also per word.
//
// --share-of S: the stage lines again on one thread for one thread's share of an S-thread call
// (every S-th chunk of the S-thread chunking), the per-thread work of S threads without the
// other threads' noise.
//
// --chunk-bytes C: the stage lines with chunks of C bytes instead of the engine's choice (the
// goal lines always use the engine's).
//
// Print order lines: sort_word_counts on W distinct words with Zipf counts (--order-words W,
// default 1,000,000; 0: none) against std::sort and __gnu_parallel::sort of the same pairs.
//
//   bench_wordcount_cpu [--text FILE] [--mib M] [--threads T] [--reps R] [--share-of S] [--chunk-bytes C]
//                       [--cold-stages 1] [--order-words W] [--quick]
// Without --text, M MiB (default 30) of Zipf text over a 100,000-word vocabulary. T: the thread
// counts to measure, comma-separated (default "2," plus all cores when there are more).
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <functional>
#include <map>
#include <parallel/algorithm>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "mapreduce/cpu_wordcount.hpp"
#include "mapreduce/word_scan.hpp"
#include "mapreduce/word_table.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/mapreduce.hpp"

using namespace tandem;

namespace {

std::vector<std::pair<std::string, std::uint64_t>> anchor_words(
    const std::unordered_map<std::string_view, std::uint64_t>& m) {
  std::vector<std::pair<std::string, std::uint64_t>> v;
  v.reserve(m.size());
  for (const auto& [w, c] : m) v.emplace_back(std::string(w), c);
  mapreduce::sort_word_counts(v);
  return v;
}

#if TANDEM_WORD_MASK_AVX2
// The tokenizer alone with the AVX2 classifier, built as the engine's AVX2 counting loop is.
[[gnu::target("avx2,bmi,bmi2"), gnu::flatten]] std::uint64_t count_words_avx2(std::string_view text) {
  std::uint64_t n = 0;
  mapreduce::detail::scan_words<mapreduce::detail::word_mask64_avx2>(text.data(), text.size(), 0, text.size(),
                                                                     [&](std::size_t, std::size_t) { ++n; });
  return n;
}
#endif

// The tokenizer with every word's key and hash (what the counting loop computes before its table),
// and with one 16-byte slot of `slots` (a power of two, as the engine's inline table) incremented
// per word at the hash's home: the table's one memory access without its compare, probing or
// inserts.
using FloorSlot = std::array<std::uint64_t, 2>;
template <mapreduce::detail::WordMaskFn Mask>
std::uint64_t keys_floor(std::string_view text, FloorSlot* slots, std::size_t n_slots) {
  using namespace mapreduce::detail;
  const char* p = text.data();
  const std::size_t n = text.size();
  const int shift = 64 - std::countr_zero(n_slots);
  std::uint64_t sum = 0;
  scan_words<Mask>(p, n, 0, n, [&](std::size_t b, std::size_t len, auto readable16) {
    const WordKey k =
        decltype(readable16)::value && len <= kShortWord ? short_word_key(p + b, len) : word_key(p, n, b, len);
    if (slots) ++slots[k.hash() >> shift][1];
    else sum += k.hash();
  });
  return sum;
}
#if TANDEM_WORD_MASK_AVX2
[[gnu::target("avx2,bmi,bmi2"), gnu::flatten]] std::uint64_t keys_floor_avx2(std::string_view text, FloorSlot* slots,
                                                                             std::size_t n_slots) {
  return keys_floor<mapreduce::detail::word_mask64_avx2>(text, slots, n_slots);
}
#endif

// Every 8-byte word of the text summed on `threads` threads: the bytes read once.
double read_floor(bench::Bench& b, std::string_view text, int threads) {
  std::vector<std::uint64_t> sums(threads);
  const auto st = b.time([&] {
    mapreduce::detail::run_threads(threads, [&](int t) {
      const std::size_t words = text.size() / 8, lo = words * t / threads, hi = words * (t + 1) / threads;
      std::uint64_t s = 0;
      for (std::size_t i = lo; i < hi; ++i) {
        std::uint64_t w;
        std::memcpy(&w, text.data() + 8 * i, 8);
        s += w;
      }
      sums[t] = s;
    });
  });
  b.record("floor", fmt::format("read every byte, {} threads", threads), st, double(text.size()), "B", true);
  return st.median;
}

struct Usage {
  double user, sys;
  long minor_faults;
};
Usage usage_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto sec = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return {sec(u.ru_utime), sec(u.ru_stime), u.ru_minflt};
}

// The engine's three stages and, for each, the spread of its threads (StageThreads' fields).
constexpr const char* kStages[3] = {"count", "merge", "output"};
constexpr const char* kSpread[3] = {"last thread's start", "longest thread", "threads' mean"};
std::array<std::array<double, 3>, 3> stage_spreads(const mapreduce::detail::CpuWordCountStats& st) {
  std::array<std::array<double, 3>, 3> out;
  const std::array<mapreduce::detail::StageThreads, 3> th{st.count_threads, st.merge_threads, st.output_threads};
  for (std::size_t k = 0; k < 3; ++k) out[k] = {th[k].last_start, th[k].longest, th[k].mean};
  return out;
}

// The engine's stages on `threads` threads, each the least of the calls (other processes' load
// only ever adds), with the process's CPU time per call (user and kernel: what the threads did
// whether or not they were descheduled) and its minor page faults (fresh memory touched).
void stage_lines(bench::Bench& b, std::string_view text, int threads, const std::string& label = "") {
  const std::size_t chunk_bytes = static_cast<std::size_t>(b.get_int("--chunk-bytes", 0));
  double count = 1e9, merge = 1e9, output = 1e9, total = 1e9, user = 1e9, sys = 1e9, serial = 1e9;
  // Per stage: the last thread's start, the longest thread, the threads' mean (least of the calls).
  std::array<std::array<double, 3>, 3> spread;
  for (auto& s : spread) s.fill(1e9);
  long faults_least = -1, faults_most = 0;
  std::vector<double> totals;  // whole calls, back to back
  std::size_t grows = 0, merge_grows = 0;
  std::uint64_t words_per_call = 0;
  for (int i = 0; i < b.warmup() + b.reps(); ++i) {
    mapreduce::detail::CpuWordCountStats st;
    const Usage u0 = usage_now();
    Stopwatch w;
    const auto words = mapreduce::detail::cpu_wordcount(text, threads, chunk_bytes, st);
    const double t = w.seconds();
    const Usage u1 = usage_now();
    if (i < b.warmup()) continue;
    count = std::min(count, st.count_seconds);
    merge = std::min(merge, st.merge_seconds);
    output = std::min(output, st.output_seconds);
    serial = std::min(serial, st.output_serial_seconds);
    const auto spreads = stage_spreads(st);
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t f = 0; f < 3; ++f) spread[k][f] = std::min(spread[k][f], spreads[k][f]);
    total = std::min(total, t);
    totals.push_back(t);
    user = std::min(user, u1.user - u0.user);
    sys = std::min(sys, u1.sys - u0.sys);
    const long faults = u1.minor_faults - u0.minor_faults;
    faults_least = faults_least < 0 ? faults : std::min(faults_least, faults);
    faults_most = std::max(faults_most, faults);
    grows = std::max(grows, st.table_grows);
    words_per_call = st.words;
    merge_grows = std::max(merge_grows, st.merge_grows);
  }
  const std::string at = fmt::format("{} threads{}, least of {}", threads, label, b.reps());
  b.info(fmt::format("stage count words, {}", at), count * 1e3, "ms");
  b.info(fmt::format("stage merge tables, {}", at), merge * 1e3, "ms");
  b.info(fmt::format("stage sort output, {}", at), output * 1e3, "ms");
  b.info(fmt::format("stage sort output on one thread (splitters, records), {}", at), serial * 1e3, "ms");
  if (threads > 1) {
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t f = 0; f < 3; ++f)
        b.info(fmt::format("stage {}: {}, {}", kStages[k], kSpread[f], at), spread[k][f] * 1e3, "ms");
  }
  b.info(fmt::format("whole call, {}", at), total * 1e3, "ms");
  // What a caller counting text after text meets (the goal's calls each follow the anchor).
  b.info(fmt::format("whole call back to back, {} threads{}, median GB/s", threads, label),
         double(text.size()) / 1e9 / summarize(totals).median, "GB/s");
  b.info(fmt::format("CPU time per call (user), {}", at), user * 1e3, "ms");
  b.info(fmt::format("CPU time per call (kernel), {}", at), sys * 1e3, "ms");
  b.info(fmt::format("minor page faults per call, {} threads{}, least", threads, label), double(faults_least), "");
  b.info(fmt::format("minor page faults per call, {} threads{}, most", threads, label), double(faults_most), "");
  b.info(fmt::format("thread table grows per call, {} threads{}, most", threads, label), double(grows), "");
  b.info(fmt::format("merged table grows per call, {} threads{}, most", threads, label), double(merge_grows), "");
  if (words_per_call > 0)
    b.info(fmt::format("stage count words per word, {}", at), count * 1e9 / double(words_per_call) * threads,
           "ns (thread time)");
}

// --cold-stages: the engine's stages as the goal's calls meet them, each call after a run of the
// anchor (one thread for a quarter second, the other cores idle): medians of the stage times and of
// their threads' spread, next to stage_lines' back-to-back calls.
template <class Anchor>
void cold_stage_lines(bench::Bench& b, std::string_view text, int threads, const Anchor& anchor) {
  std::array<std::vector<double>, 3> secs;
  std::array<std::array<std::vector<double>, 3>, 3> spread;
  for (int i = 0; i < b.warmup() + b.reps(); ++i) {
    const auto m = anchor();
    mapreduce::detail::CpuWordCountStats st;
    const auto words = mapreduce::detail::cpu_wordcount(text, threads, 0, st);
    if (i < b.warmup() || words.size() != m.size()) continue;
    const std::array<double, 3> stage{st.count_seconds, st.merge_seconds, st.output_seconds};
    const auto spreads = stage_spreads(st);
    for (std::size_t k = 0; k < 3; ++k) {
      secs[k].push_back(stage[k]);
      for (std::size_t f = 0; f < 3; ++f) spread[k][f].push_back(spreads[k][f]);
    }
  }
  if (secs[0].empty()) return b.fail("cold calls: the word count differs from the anchor's");
  for (std::size_t k = 0; k < 3; ++k) {
    b.info(fmt::format("cold stage {}, {} threads, median", kStages[k], threads), summarize(secs[k]).median * 1e3,
           "ms");
    for (std::size_t f = 0; f < 3; ++f)
      b.info(fmt::format("cold stage {}: {}, {} threads, median", kStages[k], kSpread[f], threads),
             summarize(spread[k][f]).median * 1e3, "ms");
  }
}

}  // namespace

// sort_word_counts on many distinct words (how the GPU and the distributed word counts end)
// against the same pairs sorted in the same order by std::sort on one thread and by
// __gnu_parallel::sort on as many threads; all three results checked equal.
void print_order_lines(bench::Bench& b, const std::vector<int>& thread_counts) {
  const std::size_t n = b.quick() ? 100000 : std::size_t(b.get_int("--order-words", 1000000));
  if (n == 0) return;
  // Counts of a Zipf text's vocabulary: a few large, a long tail of small ones tied with many.
  const std::vector<std::string> vocab = mapreduce::make_vocabulary(n, 11);
  std::vector<std::pair<std::string, std::uint64_t>> input;
  input.reserve(vocab.size());
  for (std::size_t r = 0; r < vocab.size(); ++r)
    input.emplace_back(vocab[r], std::max<std::uint64_t>(1, 1000000 / (r + 1)));
  std::mt19937_64 rng(3);
  std::shuffle(input.begin(), input.end(), rng);
  const auto print_order = [](const auto& x, const auto& y) {
    return x.second != y.second ? x.second > y.second : x.first < y.first;
  };
  std::vector<std::pair<std::string, std::uint64_t>> want, got;
  const auto timed = [&](const std::function<void(std::vector<std::pair<std::string, std::uint64_t>>&)>& sort) {
    return b.measure([&] {
      got = input;
      Stopwatch w;
      sort(got);
      return w.seconds();
    });
  };
  const Stats anchor = timed([&](auto& v) { std::sort(v.begin(), v.end(), print_order); });
  want = got;
  b.record("print order", "anchor: std::sort of the pairs, 1 thread", anchor, double(want.size()), "words", true);
  for (int threads : thread_counts) {
    const Stats par = timed([&](auto& v) {
      __gnu_parallel::sort(v.begin(), v.end(), print_order, __gnu_parallel::default_parallel_tag(threads));
    });
    const bool par_ok = got == want;
    b.record("print order", fmt::format("anchor: __gnu_parallel::sort of the pairs, {} threads", threads), par,
             double(n), "words", par_ok);
    const Stats ours = timed([&](auto& v) { mapreduce::sort_word_counts(v, threads); });
    const bool ok = got == want;
    if (!ok || !par_ok) b.fail(fmt::format("print order on {} threads differs from std::sort's", threads));
    b.record("print order", fmt::format("sort_word_counts, {} threads", threads), ours, double(n), "words", ok);
    b.info(fmt::format("sort_word_counts {} threads vs std::sort", threads), anchor.median / ours.median, "x");
    b.info(fmt::format("sort_word_counts {} threads vs __gnu_parallel::sort", threads), par.median / ours.median, "x");
  }
}

int main(int argc, char** argv) {
  bench::Bench b("wordcount_cpu", argc, argv);
  const std::string path = b.get("--text", "");
  std::string text;
  if (path.empty()) {
    const std::size_t mib = std::size_t(b.get_int("--mib", b.quick() ? 4 : 30));
    text = mapreduce::zipf_text(mib << 20, mapreduce::make_vocabulary(100000, 7), 1.0, 7);
  } else {
    const auto bytes = io::read_bytes(path);
    text.assign(bytes.begin(), bytes.end());
  }
  const std::string_view tv(text);
  const double gb = double(text.size()) / 1e9;
  b.info(fmt::format("text: {} ({} bytes)", path.empty() ? "generated Zipf" : path, text.size()), gb * 1e3, "MB");

  // The anchor: one pass, one thread.
  const auto anchor = [&] {
    std::unordered_map<std::string_view, std::uint64_t> m;
    mapreduce::for_each_word(text.data(), text.size(), 0, text.size(),
                             [&](std::size_t w, std::size_t n) { ++m[tv.substr(w, n)]; });
    return m;
  };
  const auto want = anchor_words(anchor());

  std::atomic<std::uint64_t> words{0};
  const auto tok = b.time([&] {
    std::uint64_t n = 0;
    mapreduce::detail::scan_words(text.data(), text.size(), 0, text.size(), [&](std::size_t, std::size_t) { ++n; });
    words = n;
  });
  b.record("floor", "tokenize only, 1 thread", tok, double(text.size()), "B", true, {{"words", words.load()}});
  double tok_avx2_median = tok.median;
#if TANDEM_WORD_MASK_AVX2
  if (mapreduce::detail::cpu_has_avx2()) {
    const auto tok2 = b.time([&] { words = count_words_avx2(tv); });
    tok_avx2_median = tok2.median;
    b.record("floor", "tokenize only (AVX2), 1 thread", tok2, double(text.size()), "B", true,
             {{"words", words.load()}});
  }
#endif
  {
    // The engine's one-thread inline table size, for the one-access floor.
    const std::size_t n_slots = std::clamp<std::size_t>(std::bit_ceil(text.size() / 64 + 1), 1024, 65536);
    std::vector<FloorSlot> slots(n_slots);
    const bool avx2 = mapreduce::detail::best_word_scan_isa() == mapreduce::detail::WordScanIsa::avx2;
    const auto floor = [&](FloorSlot* table) {
#if TANDEM_WORD_MASK_AVX2
      if (avx2) return keys_floor_avx2(tv, table, n_slots);
#endif
      return keys_floor<mapreduce::detail::word_mask64>(tv, table, n_slots);
    };
    std::atomic<std::uint64_t> sink{0};
    const auto keys = b.time([&] { sink += floor(nullptr); });
    const auto touch = b.time([&] { sink += floor(slots.data()); });
    const std::string isa = avx2 ? " (AVX2)" : "";
    b.record("floor", fmt::format("tokenize + key + hash{}, 1 thread", isa), keys, double(text.size()), "B", true);
    b.record("floor", fmt::format("tokenize + key + hash + one slot per word{}, 1 thread", isa), touch,
             double(text.size()), "B", true, {{"slots", n_slots}});
    const double w = double(words.load());
    b.info("floor per word: tokenize only (AVX2 where the engine uses it)",
           (avx2 ? tok_avx2_median : tok.median) * 1e9 / w, "ns");
    b.info("floor per word: tokenize + key + hash", keys.median * 1e9 / w, "ns");
    b.info("floor per word: tokenize + key + hash + one slot access", touch.median * 1e9 / w, "ns");
  }
  b.info(fmt::format(
             "engine's counting loop: {}",
             mapreduce::detail::best_word_scan_isa() == mapreduce::detail::WordScanIsa::avx2 ? "AVX2" : "baseline"),
         1, "");

  const int all = default_threads();
  const std::vector<int> counts = b.get_threads("--threads", all > 2 ? fmt::format("2,{}", all) : "2");
  for (int threads : counts) read_floor(b, tv, threads);
  for (int threads : counts) stage_lines(b, tv, threads);
  if (const int share_of = static_cast<int>(b.get_int("--share-of", 0)); share_of > 1) {
    // Every share_of-th chunk of the share_of-thread chunking: what one of those threads counts.
    const std::size_t chunk = mapreduce::detail::word_chunk_bytes(text.size(), share_of);
    std::string share;
    for (std::size_t c = 0; c < text.size(); c += chunk * std::size_t(share_of)) share.append(tv.substr(c, chunk));
    b.info(fmt::format("one thread's share of {} threads", share_of), double(share.size()) / 1e6, "MB");
    stage_lines(b, share, 1, fmt::format(" (a {}-thread share)", share_of));
  }
  if (b.get_int("--cold-stages", 0) != 0)
    for (int threads : counts) cold_stage_lines(b, tv, threads, anchor);
  // Rounds alternate the anchor and tandem, so that load from other processes falls on both alike.
  std::vector<double> anchor_s;
  std::vector<std::vector<double>> tandem_s(counts.size());
  std::vector<std::map<std::string, std::vector<double>>> stage_s(counts.size());  // the report's stages
  std::vector<std::vector<double>> faults_s(counts.size());                        // minor page faults of each call
  std::vector<bool> same(counts.size(), true);
  for (int round = 0; round < b.warmup() + b.reps(); ++round) {
    Stopwatch w;
    const auto m = anchor();
    const double a = w.seconds();
    if (m.size() != want.size()) b.fail("the anchor's word count changed between rounds");
    if (round >= b.warmup()) anchor_s.push_back(a);
    for (std::size_t i = 0; i < counts.size(); ++i) {
      mapreduce::WordCountOptions o;
      o.engine.device = Device::cpu;
      o.engine.threads = counts[i];
      const long faults_before = usage_now().minor_faults;
      w.reset();
      const auto r = mapreduce::wordcount(tv, o);
      const double t = w.seconds();
      const long faults = usage_now().minor_faults - faults_before;
      same[i] = same[i] && r.words == want;
      if (round < b.warmup()) continue;
      tandem_s[i].push_back(t);
      faults_s[i].push_back(double(faults));
      for (const Stage& s : r.report.stages) stage_s[i][s.name].push_back(s.seconds);
    }
  }
  const Stats at = summarize(anchor_s);
  b.record("word count", "anchor: std::unordered_map, 1 thread", at, double(text.size()), "B", true,
           {{"distinct", want.size()}});
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const int threads = counts[i];
    const Stats st = summarize(tandem_s[i]);
    if (!same[i]) b.fail(fmt::format("word count on {} threads differs from the anchor", threads));
    b.record("word count", fmt::format("tandem, {} threads", threads), st, double(text.size()), "B", same[i]);
    b.info(fmt::format("word count {} threads vs the anchor", threads), at.median / st.median, "x");
    b.info(fmt::format("minor page faults in these calls, {} threads, median", threads), summarize(faults_s[i]).median,
           "");
    for (const auto& [name, secs] : stage_s[i])
      b.info(fmt::format("stage {} in these calls, {} threads, median", name, threads), summarize(secs).median * 1e3,
             "ms");
    const double gbps = gb / st.median;
    if (threads == 2) b.goal("word count CPU 2 threads GB/s", gbps, 1.0, true, "GB/s");
    else if (threads >= 16) b.goal(fmt::format("word count CPU {} threads GB/s", threads), gbps, 6.0, true, "GB/s");
    else b.info(fmt::format("word count CPU {} threads GB/s", threads), gbps, "GB/s");
  }
  // After the goal rounds: its hundreds of megabytes of strings would change the heap they run in.
  print_order_lines(b, counts);
  return b.finish();
}
