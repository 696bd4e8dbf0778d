// The shipped MapReduce jobs (word count, group-by): device dispatch, CPU engine, output formats.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
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

void note_cpu(Report& r, const CpuStats& s) {
  r.note(fmt::format("CPU engine: {} threads, {} pairs emitted, {} table spill(s) ({} entries)", s.threads, s.pairs,
                     s.spills, s.spilled_entries));
}

template <class K>
DType key_dtype_of() {
  return dtype_of<K>();
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

std::vector<AggKind> parse_aggs(std::string_view list) {
  std::vector<AggKind> out;
  std::size_t i = 0;
  while (i <= list.size()) {
    std::size_t j = list.find(',', i);
    if (j == std::string_view::npos) j = list.size();
    const auto name = list.substr(i, j - i);
    if (name == "sum") out.push_back(AggKind::sum);
    else if (name == "count") out.push_back(AggKind::count);
    else if (name == "min") out.push_back(AggKind::min);
    else if (name == "max") out.push_back(AggKind::max);
    else if (name == "mean") out.push_back(AggKind::mean);
    else
      throw UsageError(fmt::format("aggregates: unknown aggregate '{}' (expected sum, count, min, max, mean)", name));
    i = j + 1;
  }
  if (out.empty()) throw UsageError("aggregates: none named");
  return out;
}

std::string_view to_string(AggKind a) {
  switch (a) {
    case AggKind::sum: return "sum";
    case AggKind::count: return "count";
    case AggKind::min: return "min";
    case AggKind::max: return "max";
    case AggKind::mean: break;
  }
  return "mean";
}

namespace {

template <class K, class V>
void fill_rows(GroupBy& g, std::vector<std::pair<K, typename GroupByJob<K, V>::value_type>>& pairs) {
  g.rows.resize(pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    GroupRow& r = g.rows[i];
    const auto& [k, v] = pairs[i];
    std::uint64_t bits = 0;
    std::memcpy(&bits, &k, sizeof(K));
    r.key_bits = bits;
    if constexpr (std::is_void_v<V>) {
      r.count = v;
    } else if constexpr (std::is_floating_point_v<V>) {
      r.count = v.count;
      r.dsum = v.sum;
      r.dmin = v.min;
      r.dmax = v.max;
    } else {
      r.count = v.count;
      r.isum = v.sum;
      r.imin = v.min;
      r.imax = v.max;
    }
  }
}

// Key order for the output: numeric order of the key type.
template <class K>
void sort_rows(std::vector<GroupRow>& rows) {
  std::sort(rows.begin(), rows.end(), [](const GroupRow& a, const GroupRow& b) {
    K x, y;
    std::memcpy(&x, &a.key_bits, sizeof(K));
    std::memcpy(&y, &b.key_bits, sizeof(K));
    return x < y;
  });
}

// The exact (128-bit) sum of each key's values, for the i64 overflow check.
template <class K>
struct ExactSumJob {
  using key_type = K;
  using value_type = __int128;
  const K* keys;
  const std::int64_t* values;
  template <class Emit>
  void map(std::size_t i, Emit&& emit) const {
    emit(keys[i], static_cast<__int128>(values[i]));
  }
  void reduce(__int128& into, const __int128& v) const { into += v; }
};

// The engines sum i64 values modulo 2^64, which is the exact sum whenever that fits in i64. A
// group whose count x min and count x max fit cannot have left the range; the others (if any) are
// summed again exactly on the CPU, and a sum outside i64 is an InputError naming the key.
template <class K>
void check_i64_sums(GroupBy& g, const std::vector<std::pair<K, Agg<std::int64_t>>>& pairs, const K* keys,
                    const std::int64_t* values, std::size_t n, const Options& o) {
  constexpr __int128 lo = INT64_MIN, hi = INT64_MAX;
  std::size_t unsure = 0;
  for (const auto& [k, a] : pairs) unsure += __int128(a.count) * a.min < lo || __int128(a.count) * a.max > hi;
  if (unsure == 0) return;
  Stopwatch w;
  const auto exact = cpu_mapreduce(ExactSumJob<K>{keys, values}, n, o);
  for (const auto& [k, sum] : exact)
    if (sum < lo || sum > hi)
      throw InputError(fmt::format("values: the sum of the values of key {} overflows i64 (it is {} {})", k,
                                   sum < lo ? "below" : "above", sum < lo ? INT64_MIN : INT64_MAX));
  g.report.add("exact i64 sums", fmt::format("cpu x{}", cpu_threads(o)), w.seconds(),
               fmt::format("{} group(s) near the i64 range summed again in 128 bits: all fit", unsure));
}

template <class To, class From>
std::vector<To> widen(const From* p, std::size_t n) {
  std::vector<To> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<To>(p[i]);
  return v;
}

template <class K, class VIn>
void run_groupby(GroupBy& g, const K* keys, std::size_t n, const VIn* values, const Options& o) {
  // The engines see V = void (counts), double or int64; narrower value types are widened.
  using V =
      std::conditional_t<std::is_void_v<VIn>, void,
                         std::conditional_t<std::is_floating_point_v<std::conditional_t<std::is_void_v<VIn>, int, VIn>>,
                                            double, std::int64_t>>;
  std::vector<std::conditional_t<std::is_void_v<V>, char, V>> wide;
  const std::conditional_t<std::is_void_v<V>, char, V>* vals = nullptr;
  if constexpr (!std::is_void_v<V>) {
    if constexpr (std::is_same_v<V, VIn>) {
      vals = values;
    } else {
      Stopwatch w;
      wide = widen<V>(values, n);
      vals = wide.data();
      g.report.add("widen values", "cpu", w.seconds(), fmt::format("{} values", n));
    }
  }
  using Job = GroupByJob<K, V>;
  std::vector<std::pair<K, typename Job::value_type>> pairs;
  bool done = false;
#if TANDEM_HAS_CUDA
  if (want_gpu(o, n * (sizeof(K) + (std::is_void_v<V> ? 0 : 8)), g.report)) {
    try {
      // Signed keys travel as their unsigned bit patterns: hashing and equality are the same.
      using U = std::make_unsigned_t<K>;
      auto up = detail::gpu_groupby<U, V>(reinterpret_cast<const U*>(keys),
                                          reinterpret_cast<const std::conditional_t<std::is_void_v<V>, void, V>*>(vals),
                                          n, o, g.gpu, g.report);
      pairs.resize(up.size());
      for (std::size_t i = 0; i < up.size(); ++i) {
        std::memcpy(&pairs[i].first, &up[i].first, sizeof(K));
        pairs[i].second = up[i].second;
      }
      explain_stats(g.report, g.gpu);
      done = true;
    } catch (const OutOfMemoryError& e) {
      if (o.device == Device::gpu) throw;
      g.report.notice(fmt::format("GPU out of memory ({}): fell back to the CPU engine", e.what()));
    }
  }
#else
  if (o.device == Device::gpu || o.device == Device::hybrid)
    throw NoDeviceError("device = gpu: this build has no CUDA support");
  if (o.device == Device::auto_) g.report.note("CPU-only build: CPU engine");
#endif
  if (!done) {
    Stopwatch w;
    Job job{keys, vals};
    CpuStats cs;
    pairs = cpu_mapreduce(job, n, o, &cs);
    g.report.add("CPU map+reduce+merge", "cpu", w.seconds(), fmt::format("{} records, {} groups", n, pairs.size()));
    note_cpu(g.report, cs);
  }
  if constexpr (std::is_same_v<V, std::int64_t>) check_i64_sums<K>(g, pairs, keys, vals, n, o);
  Stopwatch w;
  fill_rows<K, V>(g, pairs);
  sort_rows<K>(g.rows);
  g.report.add("sort groups", "cpu", w.seconds(), fmt::format("{} groups", g.rows.size()));
}

template <class K>
void dispatch_values(GroupBy& g, const K* keys, std::size_t n, DType vt, const void* values, bool has_values,
                     const Options& o) {
  if (!has_values) return run_groupby<K, void>(g, keys, n, nullptr, o);
  switch (vt) {
    case DType::f32: return run_groupby<K, float>(g, keys, n, static_cast<const float*>(values), o);
    case DType::f64: return run_groupby<K, double>(g, keys, n, static_cast<const double*>(values), o);
    case DType::i32: return run_groupby<K, std::int32_t>(g, keys, n, static_cast<const std::int32_t*>(values), o);
    case DType::i64: return run_groupby<K, std::int64_t>(g, keys, n, static_cast<const std::int64_t*>(values), o);
    default: break;
  }
  throw UsageError(fmt::format("value_type = {}: expected f32, f64, i32 or i64", to_string(vt)));
}

}  // namespace

GroupBy groupby(DType key_type, const void* keys, std::size_t n, DType value_type, const void* values,
                std::size_t value_count, bool has_values, const Options& opts) {
  GroupBy g;
  g.report.operation = "groupby";
  g.key_type = key_type;
  g.value_type = value_type;
  g.has_values = has_values;
  if (has_values && value_count != n)
    throw InputError(fmt::format("keys and values differ in length: {} keys but {} values", n, value_count));
  switch (key_type) {
    case DType::u32:
      dispatch_values(g, static_cast<const std::uint32_t*>(keys), n, value_type, values, has_values, opts);
      break;
    case DType::u64:
      dispatch_values(g, static_cast<const std::uint64_t*>(keys), n, value_type, values, has_values, opts);
      break;
    case DType::i32:
      dispatch_values(g, static_cast<const std::int32_t*>(keys), n, value_type, values, has_values, opts);
      break;
    case DType::i64:
      dispatch_values(g, static_cast<const std::int64_t*>(keys), n, value_type, values, has_values, opts);
      break;
    default: throw UsageError(fmt::format("key_type = {}: expected u32, u64, i32 or i64", to_string(key_type)));
  }
  return g;
}

namespace {
std::string key_text(DType t, std::uint64_t bits) {
  switch (t) {
    case DType::i32: {
      std::int32_t v;
      std::uint32_t b = static_cast<std::uint32_t>(bits);
      std::memcpy(&v, &b, 4);
      return fmt::format("{}", v);
    }
    case DType::i64: {
      std::int64_t v;
      std::memcpy(&v, &bits, 8);
      return fmt::format("{}", v);
    }
    default: return fmt::format("{}", bits);
  }
}
std::string float_text(double v, bool as_f32) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (as_f32) return fmt::format("{}", static_cast<float>(v));
  return fmt::format("{}", v);
}
}  // namespace

void write_groupby_csv(std::ostream& os, const GroupBy& g, const std::vector<AggKind>& aggs) {
  os << "key";
  for (auto a : aggs) os << ',' << to_string(a);
  os << '\n';
  const bool fl = dtype_is_float(g.value_type);
  const bool f32 = g.value_type == DType::f32;
  std::string line;
  for (const auto& r : g.rows) {
    line = key_text(g.key_type, r.key_bits);
    for (auto a : aggs) {
      line += ',';
      switch (a) {
        case AggKind::count: line += fmt::format("{}", r.count); break;
        case AggKind::sum: line += fl ? float_text(r.dsum, false) : fmt::format("{}", r.isum); break;
        case AggKind::min: line += fl ? float_text(r.dmin, f32) : fmt::format("{}", r.imin); break;
        case AggKind::max: line += fl ? float_text(r.dmax, f32) : fmt::format("{}", r.imax); break;
        case AggKind::mean:
          line += float_text(r.count ? (fl ? r.dsum : double(r.isum)) / double(r.count) : 0.0, false);
          break;
      }
    }
    line += '\n';
    os << line;
  }
}

}  // namespace tandem::mapreduce
