// The shipped MapReduce job (word count): device dispatch, CPU engine, the GPU engines' --explain notes.
#include <algorithm>
#include <functional>
#include <memory>
#include <parallel/algorithm>

#include <fmt/format.h>

#include "mapreduce/cpu_wordcount.hpp"
#include "mapreduce/gpu_jobs.hpp"
#include "mapreduce/word_order.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/mapreduce.hpp"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace tandem::mapreduce {

namespace detail {
void run_threads(int threads, const std::function<void(int)>& body) {
#ifdef _OPENMP
  parallel_region(threads, [&](int t, int) { body(t); });  // a job's exception leaves after every thread
#else
  (void)threads;
  body(0);  // one thread takes every piece of work
#endif
}
}  // namespace detail

int cpu_threads(const Options& o) { return o.threads > 0 ? o.threads : default_threads(); }

namespace {

#if TANDEM_HAS_CUDA
// auto: the GPU when one is usable and the input is big enough to pay for the transfer.
bool want_gpu(const Options& o, std::size_t bytes, Report& r) {
  if (o.device == Device::cpu) return false;
  const bool have = gpu_count() > 0;
  if (o.device == Device::gpu || o.device == Device::hybrid) {
    if (!have) throw NoDeviceError("device = gpu: no usable GPU (CPU-only build or no device)");
    return true;
  }
  if (!have) {
    r.note("no GPU: CPU engine");
    return false;
  }
  if (bytes < (std::size_t{1} << 20)) {
    r.note(fmt::format("input {} bytes: below 1 MiB the CPU engine is faster than a GPU round trip", bytes));
    return false;
  }
  return true;
}
#endif

// `in` with ASCII letters folded to lower case, into out[0, in.size()), on `threads` threads.
void lower_ascii(std::string_view in, char* out, int threads) {
  detail::run_threads(threads, [&](int t) {
    const std::size_t b = in.size() * t / threads, e = in.size() * (t + 1) / threads;
    for (std::size_t i = b; i < e; ++i) out[i] = static_cast<char>(ascii_lower(static_cast<unsigned char>(in[i])));
  });
}

void note_cpu_words(Report& r, const detail::CpuWordCountStats& s, std::size_t distinct) {
  const std::string where = fmt::format("cpu x{}", s.threads);
  r.add("CPU count words", where, s.count_seconds,
        fmt::format("{} words in {} chunks of {}{}", s.words, s.chunks, human_bytes(s.chunk_bytes),
                    s.isa == detail::WordScanIsa::avx2 ? ", AVX2" : ""));
  if (s.partitions) r.add("CPU merge tables", where, s.merge_seconds, fmt::format("{} hash ranges", s.partitions));
  r.add("sort output", where, s.output_seconds, fmt::format("{} words", distinct));
  r.note(fmt::format("CPU engine: {} threads, thread tables of up to {} slots ({} grow(s) in all)", s.threads,
                     s.table_slots, s.table_grows));
}

}  // namespace

void sort_word_counts(std::vector<std::pair<std::string, std::uint64_t>>& v, int threads) {
  const int T = threads > 0 ? threads : default_threads();
  if (T > 1 && v.size() >= 16384) {
    // In place: 16 threads of the H200 host sorted a million entries in 35-40 ms this way, against
    // 46-84 ms for the order of keys below and moving every entry to its place (fresh pages, misses).
    __gnu_parallel::sort(
        v.begin(), v.end(),
        [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; },
        __gnu_parallel::default_parallel_tag(T));
    return;
  }
  // One thread: radix-sorted order keys (1.6-2.3 times std::sort's speed on H200 hosts), then the
  // entries moved to their places.
  std::vector<std::string_view> words(v.size());
  std::vector<std::uint64_t> counts(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    words[i] = v[i].first;
    counts[i] = v[i].second;
  }
  const auto order = detail::word_count_order(words, counts, 1);
  std::vector<std::pair<std::string, std::uint64_t>> out(v.size());
  for (std::size_t i = 0; i < order.size(); ++i) out[i] = std::move(v[order[i]]);
  v = std::move(out);
}

namespace {

// The files read into one buffer, a newline after each but the last.
io::CharBuffer read_joined(const std::vector<std::string>& paths, int threads) {
  io::CharBuffer text = io::read_bytes(paths[0], threads);
  for (std::size_t i = 1; i < paths.size(); ++i) {
    const io::CharBuffer more = io::read_bytes(paths[i], threads);
    text.push_back('\n');
    text.insert(text.end(), more.begin(), more.end());
  }
  return text;
}

}  // namespace

WordCount wordcount(std::string_view text_in, const WordCountOptions& opts) {
  WordCount out;
  out.report.operation = "wordcount";
  std::unique_ptr<char[]> lowered;
  std::string_view text = text_in;
  if (opts.lowercase) {
    Stopwatch w;
    const int threads = text_in.size() < (std::size_t{1} << 20) ? 1 : cpu_threads(opts.engine);
    lowered.reset(new char[text_in.size()]);  // every byte is written below: not zero-filled first
    lower_ascii(text_in, lowered.get(), threads);
    text = std::string_view(lowered.get(), text_in.size());
    out.report.add("lowercase", fmt::format("cpu x{}", threads), w.seconds(), fmt::format("{} bytes", text.size()));
  }
  bool done = false;
#if TANDEM_HAS_CUDA
  if (want_gpu(opts.engine, text.size(), out.report)) {
    try {
      Stopwatch w;
      out.words = detail::gpu_wordcount(text, opts.engine, out.gpu, out.report);
      explain_stats(out.report, out.gpu);
      done = true;
    } catch (const OutOfMemoryError& e) {
      if (opts.engine.device == Device::gpu) throw;
      out.report.notice(fmt::format("GPU out of memory ({}): fell back to the CPU engine", e.what()));
    }
  }
#else
  if (opts.engine.device == Device::gpu || opts.engine.device == Device::hybrid)
    throw NoDeviceError("device = gpu: this build has no CUDA support");
  if (opts.engine.device == Device::auto_) out.report.note("CPU-only build: CPU engine");
#endif
  if (!done) {
    detail::CpuWordCountStats st;
    out.words = detail::cpu_wordcount(text, cpu_threads(opts.engine), 0, st);
    note_cpu_words(out.report, st, out.words.size());
    out.total_words = st.words;  // counted by the engine: a pass over every pair costs 0.1 ms
    return out;
  }
  for (const auto& p : out.words) out.total_words += p.second;
  return out;
}

WordCount wordcount_files(const std::vector<std::string>& paths, const WordCountOptions& opts) {
  if (paths.empty()) throw UsageError("wordcount: no input files");
  WordCountOptions host_opts = opts;
  std::string fell_back;
#if TANDEM_HAS_CUDA
  if (opts.engine.device != Device::cpu && std::all_of(paths.begin(), paths.end(), io::is_sized_file)) {
    std::vector<io::SizedFile> files;
    std::uint64_t bytes = paths.size() - 1;  // the newlines between files
    for (const auto& p : paths) bytes += files.emplace_back(p).size();
    WordCount out;
    out.report.operation = "wordcount";
    if (want_gpu(opts.engine, bytes, out.report)) {
      try {
        out.words = detail::gpu_wordcount_files(files, opts.lowercase, opts.engine, out.gpu, out.report);
        explain_stats(out.report, out.gpu);
        for (const auto& p : out.words) out.total_words += p.second;
        return out;
      } catch (const OutOfMemoryError& e) {
        if (opts.engine.device == Device::gpu) throw;
        fell_back = fmt::format("GPU out of memory ({}): fell back to the CPU engine", e.what());
        host_opts.engine.device = Device::cpu;  // not tried again on the text in memory
      }
    }
  }
#endif
  Stopwatch w;
  // One file is counted in its page-cache pages (mapped: no fresh buffer to fault in and copy
  // into); several are joined with newlines into one buffer.
  io::MappedArray mapped;
  io::CharBuffer joined;
  std::string_view text;
  if (paths.size() == 1) {
    mapped = io::map_array(paths[0], DType::u8, cpu_threads(opts.engine));
    text = std::string_view(reinterpret_cast<const char*>(mapped.data), mapped.count);
  } else {
    joined = read_joined(paths, cpu_threads(opts.engine));
    text = std::string_view(joined.data(), joined.size());
  }
  const double read_s = w.seconds();
  WordCount out = wordcount(text, host_opts);
  out.report.stages.insert(
      out.report.stages.begin(),
      Stage{mapped.mapped ? "map input" : "read input", "cpu", read_s,
            fmt::format("{} file{}, {}", paths.size(), paths.size() == 1 ? "" : "s", human_bytes(text.size()))});
  if (!fell_back.empty()) out.report.notice(std::move(fell_back));
  return out;
}

}  // namespace tandem::mapreduce
