// Word count on the CPU: tandem::mapreduce::wordcount (device cpu) against the anchor, a single
// pass of the same tokenizer into a std::unordered_map<std::string_view, uint64_t>, on the same
// text in the same run. Both results are checked equal (the anchor's map, sorted as wordcount
// sorts, against wordcount's words); the anchor's time is its counting pass alone (its words are
// neither sorted nor copied into strings, which wordcount's time includes). Rounds alternate the
// two.
//
// Stage lines: the engine's own timers (least of the calls), its CPU time and page faults per call.
//
// Floor lines: every byte read once (the threads' share of memory bandwidth) and the tokenizer
// alone on one thread (what `wc -w` does; baseline SSE2, and AVX2 where the CPU has it, as the
// engine uses), so the distance of the count to both is visible.
//
//   bench_wordcount_cpu [--text FILE] [--mib M] [--threads T] [--reps R] [--quick]
// Without --text, M MiB (default 30) of Zipf text over a 100,000-word vocabulary. T: the thread
// counts to measure, comma-separated (default "2," plus all cores when there are more).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "mapreduce/cpu_wordcount.hpp"
#include "mapreduce/word_scan.hpp"
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

// The engine's stages on `threads` threads, each the least of the calls (other processes' load
// only ever adds), with the process's CPU time per call (user and kernel: what the threads did
// whether or not they were descheduled) and its minor page faults (fresh memory touched).
void stage_lines(bench::Bench& b, std::string_view text, int threads) {
  double count = 1e9, merge = 1e9, output = 1e9, total = 1e9, user = 1e9, sys = 1e9;
  long faults_least = -1, faults_most = 0;
  std::size_t grows = 0, merge_grows = 0;
  for (int i = 0; i < b.warmup() + b.reps(); ++i) {
    mapreduce::detail::CpuWordCountStats st;
    const Usage u0 = usage_now();
    Stopwatch w;
    const auto words = mapreduce::detail::cpu_wordcount(text, threads, 0, st);
    const double t = w.seconds();
    const Usage u1 = usage_now();
    if (i < b.warmup()) continue;
    count = std::min(count, st.count_seconds);
    merge = std::min(merge, st.merge_seconds);
    output = std::min(output, st.output_seconds);
    total = std::min(total, t);
    user = std::min(user, u1.user - u0.user);
    sys = std::min(sys, u1.sys - u0.sys);
    const long faults = u1.minor_faults - u0.minor_faults;
    faults_least = faults_least < 0 ? faults : std::min(faults_least, faults);
    faults_most = std::max(faults_most, faults);
    grows = std::max(grows, st.table_grows);
    merge_grows = std::max(merge_grows, st.merge_grows);
  }
  const std::string at = fmt::format("{} threads, least of {}", threads, b.reps());
  b.info(fmt::format("stage count words, {}", at), count * 1e3, "ms");
  b.info(fmt::format("stage merge tables, {}", at), merge * 1e3, "ms");
  b.info(fmt::format("stage sort output, {}", at), output * 1e3, "ms");
  b.info(fmt::format("whole call, {}", at), total * 1e3, "ms");
  b.info(fmt::format("CPU time per call (user), {}", at), user * 1e3, "ms");
  b.info(fmt::format("CPU time per call (kernel), {}", at), sys * 1e3, "ms");
  b.info(fmt::format("minor page faults per call, {} threads, least", threads), double(faults_least), "");
  b.info(fmt::format("minor page faults per call, {} threads, most", threads), double(faults_most), "");
  b.info(fmt::format("thread table grows per call, {} threads, most", threads), double(grows), "");
  b.info(fmt::format("merged table grows per call, {} threads, most", threads), double(merge_grows), "");
}

}  // namespace

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
#if TANDEM_WORD_MASK_AVX2
  if (mapreduce::detail::cpu_has_avx2()) {
    const auto tok2 = b.time([&] { words = count_words_avx2(tv); });
    b.record("floor", "tokenize only (AVX2), 1 thread", tok2, double(text.size()), "B", true,
             {{"words", words.load()}});
  }
#endif
  b.info(fmt::format(
             "engine's counting loop: {}",
             mapreduce::detail::best_word_scan_isa() == mapreduce::detail::WordScanIsa::avx2 ? "AVX2" : "baseline"),
         1, "");

  const int all = default_threads();
  const std::vector<int> counts = b.get_threads("--threads", all > 2 ? fmt::format("2,{}", all) : "2");
  for (int threads : counts) read_floor(b, tv, threads);
  for (int threads : counts) stage_lines(b, tv, threads);
  // Rounds alternate the anchor and tandem, so that load from other processes falls on both alike.
  std::vector<double> anchor_s;
  std::vector<std::vector<double>> tandem_s(counts.size());
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
      w.reset();
      const auto r = mapreduce::wordcount(tv, o);
      const double t = w.seconds();
      same[i] = same[i] && r.words == want;
      if (round >= b.warmup()) tandem_s[i].push_back(t);
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
    const double gbps = gb / st.median;
    if (threads == 2) b.goal("word count CPU 2 threads GB/s", gbps, 1.0, true, "GB/s");
    else if (threads >= 16) b.goal(fmt::format("word count CPU {} threads GB/s", threads), gbps, 6.0, true, "GB/s");
    else b.info(fmt::format("word count CPU {} threads GB/s", threads), gbps, "GB/s");
  }
  return b.finish();
}
