// tandem::mapreduce — MapReduce on the CPU and the GPU (unified shared/global memory management).
//
// A job is a type with
//   key_type, value_type
//   template <class Emit> void map(std::size_t record, Emit&& emit) const;   // emit(key, value), 0..n times
//   void reduce(value_type& into, const value_type& v) const;                // associative, commutative
// Records are numbered 0..M-1; the job reads its own data for record i (a chunk of text, a row).
// The CPU engine (cpu_mapreduce below) runs any such job with OpenMP threads, each with a local
// open-addressing table that spills into hash partitions when it reaches a size limit, followed by
// a partitioned parallel merge. The GPU engine (tandem/mapreduce/gpu_engine.cuh, for .cu files)
// runs jobs whose map/reduce are __host__ __device__ and whose keys are fixed-width: sampling pass,
// hot keys preloaded into a shared-memory pool, per-block global tables, final merge.
//
// Shipped jobs: word count (words of text) and group-by (integer keys, numeric values).
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/agg_order.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"
#include "tandem/cuda/hd.hpp"
#include "tandem/mapreduce/detail/local_table.hpp"

namespace tandem::mapreduce {

// ---------------------------------------------------------------------------------------------
// Options shared by the engines. Zero / negative means "tuned or default".
struct Options {
  Device device{Device::auto_};
  int threads{0};                  // CPU threads (0: default_threads())
  std::size_t cpu_table_limit{0};  // cpu_mapreduce: entries per thread-local table before it spills (0: none)
  // GPU. All 0/-1: chosen by the tuner and cached.
  int blocks{0};               // Bs
  int block_threads{0};        // N (multiple of 32)
  double sample_fraction{-1};  // p, in [0, 1)
  double hot_fraction{-1};     // share of the sampled distinct keys preloaded as hot (0.05..0.10)
  bool hot_keys{true};         // false: no shared-memory pool at all (the "off" case)
  // Global tier: per-block global tables, or cold keys straight into the global result
  // table ("direct"). auto_: the tuner measures both on the first job of a problem class and
  // caches the winner (TuningCache, op "mapreduce.tables"); without tuning, direct.
  enum class Tables { auto_, block, direct };
  Tables tables{Tables::auto_};
  std::size_t shared_entries{0};      // sm_pool entries per block; hash: most hot keys (0: what fits)
  std::size_t block_pool_entries{0};  // gm_pool entries per block (0: from the sampling estimate)
  std::size_t spill_entries{0};       // global spill list; hash: overflow list (0: sized from the input)
  std::size_t result_entries{0};      // initial global result pool; hash: table slots (0: from the sample)
  // Group-by engine: chained (per-block chained tables, hot keys in a shared-memory pool with
  // mem_flag; also the only engine for word count) or the open-addressing hash path (integer keys, hot keys in a shared
  // open-addressing table, key and aggregate in one global slot). auto_: hash for group-by.
  enum class Mode { auto_, chained, hash };
  Mode mode{Mode::auto_};
  // Hash path: when every sampled key is hot and there are at most 1,024 of them, place them in
  // the shared table by two-choice (cuckoo) hashing: two fixed slots per key, no probe loop.
  bool two_choice{true};
  // Hash path, hot keys that are the top of a larger key set (or too many for the above): a
  // bucketed two-choice table (two buckets of 4 slots per key, 4/5 full) that each block builds
  // from the hot list, instead of linear probing at half load.
  bool hot_buckets{true};
  // Hash path, counts with a probed hot table: group each warp's lanes by key (__match_any_sync)
  // so one lane per distinct key updates its counter.
  bool warp_match{true};
  // Hash path, counts: cold keys (not hot) of a large job are sorted by hash partition per tile in
  // shared memory, appended to per-partition regions and reduced partition by partition in shared
  // memory, instead of going one by one to the global table (the tuner measures both).
  bool partition_cold{true};
  // Hash path: integer keys whose range (max - min + 1) is small are reduced into direct-indexed
  // accumulators (slot = key - min), partitioned by the slot's high bits, and come out in key
  // order; a wide range takes the hash table (mapreduce/hash_groupby/dense_plan.hpp says when).
  bool dense_range{true};
  bool tune{true};                                         // measure candidates on first use of a problem class
  std::uint64_t tune_min_records{std::uint64_t{1} << 22};  // smaller jobs are not worth tuning
};

// What the GPU engine did, for --explain and the tests.
struct EngineStats {
  std::uint64_t records{0};
  std::uint64_t sampled_records{0};
  std::uint64_t hot_keys{0};      // H
  double hot_share{0};            // share of the sampled pairs whose key is hot
  std::uint64_t shared_hits{0};   // pairs reduced into the shared-memory pool
  std::uint64_t global_hits{0};   // pairs reduced into global memory (block tables / result)
  std::uint64_t spilled{0};       // pairs that went to the spill list
  std::uint64_t result_grows{0};  // times the global result table was grown
  std::uint64_t retries{0};       // whole-job retries with larger buffers
  std::uint64_t distinct{0};
  int blocks{0}, block_threads{0};
  double sample_fraction{0}, hot_fraction{0};
  std::size_t shared_entries{0}, block_pool_entries{0}, spill_entries{0};
  bool block_tables{true}, hot_path{true};
  // hash path
  std::string engine{"chained"};       // "chained" or "hash"
  std::uint64_t sampled_distinct{0};   // distinct keys in the sample
  std::uint64_t distinct_estimate{0};  // Chao1 estimate from the sample (a lower bound)
  std::uint64_t distinct_upper{0};     // Good-Turing upper bound (the table is sized between the two)
  std::uint64_t table_slots{0};        // global table slots (after any grow)
  std::uint32_t sub_tables{1};         // accumulator copies per block in shared memory
  bool two_choice{false};              // hot keys placed by two-choice hashing (no probe loop)
  bool hot_buckets{false};             // hot keys in a bucketed two-choice table
  bool warp_match{false};              // lanes grouped by key before the hot table (counts)
  std::uint32_t partitions{0};         // partitioned cold tier: partitions (0: not used)
  std::string partition_note;          // its sizes, or why it was not used
  std::uint64_t partitioned{0};        // pairs that went through the partitions
  std::uint64_t partition_direct{0};   // of those, pairs sent to the global table (full region or reduce table)
  bool dense{false};                   // the dense-range path (direct-indexed accumulators) ran
  std::uint64_t key_range{0};          // its key range R (max - min + 1)
  std::string dense_note;              // why the dense-range path was not taken
};

// ---------------------------------------------------------------------------------------------
// The CPU engine's key hash (tandem/core/hash.hpp's functions, the same on the GPU).
template <class K>
struct Hash {
  TANDEM_HD std::uint64_t operator()(const K& k) const {
    if constexpr (std::is_integral_v<K>) {
      return mix64(static_cast<std::uint64_t>(k));
    } else {
      return std::hash<K>{}(k);
    }
  }
};
template <>
struct Hash<std::string_view> {
  std::uint64_t operator()(std::string_view s) const { return hash_bytes(s.data(), s.size()); }
};

// ---------------------------------------------------------------------------------------------
// Word tokenisation: maximal runs of ASCII letters, digits, '\'', '_' and bytes >= 0x80.
TANDEM_HD bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '\'' || c == '_' ||
         c >= 0x80;
}
TANDEM_HD unsigned char ascii_lower(unsigned char c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

// Calls f(begin, length) for every word that *starts* inside [first, last) of text[0, n): a word
// crossing `last` is finished past it; a word crossing `first` belongs to the previous chunk.
template <class F>
TANDEM_HD void for_each_word(const char* text, std::size_t n, std::size_t first, std::size_t last, F&& f) {
  std::size_t i = first;
  if (i > 0 && i < n && is_word_byte(static_cast<unsigned char>(text[i - 1])))
    while (i < n && is_word_byte(static_cast<unsigned char>(text[i]))) ++i;  // skip the tail of a word
  while (i < last) {
    while (i < last && !is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
    if (i >= last) break;
    const std::size_t b = i;
    while (i < n && is_word_byte(static_cast<unsigned char>(text[i]))) ++i;
    f(b, i - b);
  }
}

// ---------------------------------------------------------------------------------------------
// Group-by accumulators. A is double (float inputs) or int64 (integer inputs). min/max use a total
// order on -0.0 < +0.0 and ignore NaN (NaN only if every value was NaN: tandem/core/agg_order.hpp);
// sum propagates NaN.
template <class A>
struct Agg {
  A sum;
  A min;
  A max;
  std::uint64_t count;
};

template <class A, class V>
TANDEM_HD Agg<A> agg_of(V v) {
  const A a = static_cast<A>(v);
  return Agg<A>{a, a, a, 1};
}
template <class A>
TANDEM_HD void agg_reduce(Agg<A>& into, const Agg<A>& v) {
  if constexpr (std::is_integral_v<A>)  // wraps modulo 2^64; groupby() detects a sum beyond i64 afterwards
    into.sum =
        static_cast<A>(static_cast<std::make_unsigned_t<A>>(into.sum) + static_cast<std::make_unsigned_t<A>>(v.sum));
  else into.sum += v.sum;
  if (agg_less(v.min, into.min)) into.min = v.min;
  if (agg_greater(v.max, into.max)) into.max = v.max;
  into.count += v.count;
}

template <class V>
using agg_acc_t = std::conditional_t<std::is_floating_point_v<V>, double, std::int64_t>;

// Group-by job: keys[i] with values[i] (V = void: counts only).
template <class K, class V>
struct GroupByJob {
  using key_type = K;
  using value_type = std::conditional_t<std::is_void_v<V>, std::uint64_t,
                                        Agg<agg_acc_t<std::conditional_t<std::is_void_v<V>, int, V>>>>;
  // Float sums depend on the order of addition: the CPU engine keeps it fixed (see cpu_mapreduce).
  static constexpr bool fixed_order = std::is_floating_point_v<std::conditional_t<std::is_void_v<V>, int, V>>;
  const K* keys{nullptr};
  const std::conditional_t<std::is_void_v<V>, char, V>* values{nullptr};

  template <class Emit>
  TANDEM_HD void map(std::size_t i, Emit&& emit) const {
    if constexpr (std::is_void_v<V>) {
      emit(keys[i], value_type{1});
    } else {
      emit(keys[i], agg_of<agg_acc_t<V>>(values[i]));
    }
  }
  TANDEM_HD void reduce(value_type& into, const value_type& v) const {
    if constexpr (std::is_void_v<V>) {
      into += v;
    } else {
      agg_reduce(into, v);
    }
  }
  // The value that changes nothing when reduced (GPU engine: preloaded hot keys). NaN is the
  // identity of min/max in agg_less's order, -0.0 that of a float sum.
  TANDEM_HD value_type identity() const {
    if constexpr (std::is_void_v<V>) {
      return 0;
    } else if constexpr (std::is_floating_point_v<V>) {
      return value_type{-0.0, __builtin_nan(""), __builtin_nan(""), 0};
    } else {
      return value_type{0, INT64_MAX, INT64_MIN, 0};
    }
  }
};

// Word count as a generic job (cpu_mapreduce; wordcount() itself uses its own CPU engine): keys are views into
// the text (any length).
struct WordCountCpuJob {
  using key_type = std::string_view;
  using value_type = std::uint64_t;
  const char* text{nullptr};
  std::size_t size{0};
  std::size_t chunk{1 << 16};

  std::size_t records() const { return (size + chunk - 1) / chunk; }
  template <class Emit>
  void map(std::size_t i, Emit&& emit) const {
    const std::size_t first = i * chunk, last = std::min(size, first + chunk);
    for_each_word(text, size, first, last,
                  [&](std::size_t b, std::size_t len) { emit(std::string_view(text + b, len), value_type{1}); });
  }
  void reduce(value_type& into, const value_type& v) const { into += v; }
};

// ---------------------------------------------------------------------------------------------
// CPU engine.

struct CpuStats {
  int threads{1};
  std::uint64_t pairs{0};   // pairs emitted by map
  std::uint64_t spills{0};  // times a thread-local table reached the limit and was drained
  std::uint64_t spilled_entries{0};
};

// A job whose reduce is not associative in floating point sets `static constexpr bool fixed_order
// = true`: the CPU engine then reduces blocks of fixed_order_block(records) records, each by one
// thread in record order, and merges the blocks in block order, so every key's result is the same
// whatever the thread count and schedule.
template <class Job>
constexpr bool fixed_order_v = requires {
  requires Job::fixed_order;
};
// At least 2^14 records, at most 256 blocks: the block size depends on the record count alone.
constexpr std::size_t fixed_order_block(std::size_t records) {
  return std::max<std::size_t>(std::size_t{1} << 14, (records + 255) / 256);
}

int cpu_threads(const Options& o);  // o.threads or default_threads()
namespace detail {
// Runs body(t) on `threads` CPU threads at once, t = 0 .. threads - 1, and returns when all are
// done (an OpenMP parallel region, in the library). The first exception a body throws is
// rethrown here after every thread returned; the others skip their bodies if not yet begun.
void run_threads(int threads, const std::function<void(int)>& body);
// Calls body(lo, hi) for every piece [lo, hi) of [0, n), `piece` long (the last shorter), on
// `threads` threads: pieces are claimed from a counter, so all are done even if fewer threads
// start than asked.
template <class Body>
void for_each_piece(std::size_t n, std::size_t piece, int threads, const Body& body) {
  std::atomic<std::size_t> next{0};
  run_threads(threads, [&](int) {
    for (std::size_t b = next.fetch_add(piece); b < n; b = next.fetch_add(piece)) body(b, std::min(n, b + piece));
  });
}
}  // namespace detail

// Runs `job` over records [0, records) on CPU threads; returns one (key, value) per distinct key,
// in no particular order.
template <class Job>
std::vector<std::pair<typename Job::key_type, typename Job::value_type>> cpu_mapreduce(const Job& job,
                                                                                       std::size_t records,
                                                                                       const Options& opts,
                                                                                       CpuStats* stats = nullptr) {
  using K = typename Job::key_type;
  using V = typename Job::value_type;
  using Pair = std::pair<K, V>;
  constexpr bool kFixed = fixed_order_v<Job>;
  const int T = std::max(1, std::min<int>(cpu_threads(opts), static_cast<int>(std::max<std::size_t>(1, records))));
  const int P = T;  // merge partitions
  auto reducer = [&job](V& a, const V& b) { job.reduce(a, b); };
  Hash<K> hasher;
  const std::size_t limit = opts.cpu_table_limit;
  // Records go in grains, handed to threads as they come; fixed order: a grain is a block.
  const std::size_t grain =
      kFixed ? fixed_order_block(records)
             : std::max<std::size_t>(1, std::min<std::size_t>(64, records / (std::size_t(T) * 8) + 1));
  const std::size_t grains = (records + grain - 1) / grain;
  // Sources of drained entries, merged in this order: the threads, or (fixed order) the blocks.
  const std::size_t S = kFixed ? std::max<std::size_t>(grains, 1) : std::size_t(T);
  // parts[s][p]: entries drained by source s that belong to partition p, with their hashes.
  std::vector<std::vector<std::vector<std::pair<Pair, std::uint64_t>>>> parts(
      S, std::vector<std::vector<std::pair<Pair, std::uint64_t>>>(P));
  std::vector<std::uint64_t> pairs(T, 0), spills(T, 0), spilled(T, 0);

  const std::int64_t groups = static_cast<std::int64_t>(grains);
  std::atomic<std::int64_t> next_group{0};  // grains are handed out one at a time
  detail::run_threads(T, [&](int t) {
    std::uint64_t my_pairs = 0;  // a local count: pairs[t] of neighbouring threads share a cache line
    std::size_t src = std::size_t(t);
    detail::LocalTable<K, V> table(limit ? limit : 1024);
    auto drain = [&] {
      table.for_each([&](const K& k, const V& v, std::uint64_t h) {
        parts[src][(h >> 40) % P].push_back({{k, v}, h});
      });
      table.clear();
    };
    for (std::int64_t g = next_group++; g < groups; g = next_group++) {
      if constexpr (kFixed) src = std::size_t(g);
      const std::size_t b = std::size_t(g) * grain, e = std::min(records, b + grain);
      for (std::size_t i = b; i < e; ++i) {
        job.map(i, [&](const K& k, const V& v) {
          ++my_pairs;
          table.upsert(k, v, hasher(k), reducer);
          if (limit && table.size() >= limit) {
            ++spills[t];
            spilled[t] += table.size();
            drain();
          }
        });
      }
      if constexpr (kFixed) drain();
    }
    if constexpr (!kFixed) drain();
    pairs[t] = my_pairs;
  });
  // Partitioned merge: partition p reduces every source's entries of p, sources in order.
  std::vector<std::vector<Pair>> merged(P);
  std::atomic<int> next_part{0};
  detail::run_threads(T, [&](int) {
    for (int p = next_part++; p < P; p = next_part++) {
      std::size_t n = 0;
      for (std::size_t s = 0; s < S; ++s) n += parts[s][p].size();
      detail::LocalTable<K, V> table(n / 2 + 1);
      for (std::size_t s = 0; s < S; ++s)
        for (const auto& [kv, h] : parts[s][p]) table.upsert(kv.first, kv.second, h, reducer);
      merged[p].reserve(table.size());
      table.for_each([&](const K& k, const V& v, std::uint64_t) { merged[p].emplace_back(k, v); });
    }
  });
  std::vector<Pair> out;
  std::size_t total = 0;
  for (auto& m : merged) total += m.size();
  out.reserve(total);
  for (auto& m : merged) out.insert(out.end(), std::make_move_iterator(m.begin()), std::make_move_iterator(m.end()));
  if (stats) {
    stats->threads = T;
    stats->pairs = stats->spills = stats->spilled_entries = 0;
    for (int t = 0; t < T; ++t) {
      stats->pairs += pairs[t];
      stats->spills += spills[t];
      stats->spilled_entries += spilled[t];
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The shipped jobs, with device dispatch (auto: GPU when present and the input is large enough).

struct WordCountOptions {
  bool lowercase{false};
  Options engine;
};

struct WordCount {
  std::vector<std::pair<std::string, std::uint64_t>> words;  // sorted: count desc, then word bytewise
  std::uint64_t total_words{0};
  EngineStats gpu;
  Report report;
};

// Counts the words of `text`. With lowercase, ASCII letters are folded first.
WordCount wordcount(std::string_view text, const WordCountOptions& opts = {});

// Counts the words of the files at `paths` ("-": standard input), read as one text with a newline
// after each file but the last, so that no word spans two. On the GPU, regular files are read in
// pieces straight into pinned buffers whose upload overlaps the next piece's read: the host never
// holds the whole text. InputError names a file that cannot be read.
WordCount wordcount_files(const std::vector<std::string>& paths, const WordCountOptions& opts = {});

// Sorts (word, count) pairs as the CLI prints them: count descending, then word bytewise. On
// `threads` threads (0: default_threads()) when there are many.
void sort_word_counts(std::vector<std::pair<std::string, std::uint64_t>>& v, int threads = 1);

enum class AggKind { sum, count, min, max, mean };
std::vector<AggKind> parse_aggs(std::string_view list);  // "sum,count" ; UsageError on bad names
std::string_view to_string(AggKind a);

// One group: the key (as its bit pattern widened to 64 bits, see key_type) and the accumulators.
// Integer values accumulate in int64 (isum/imin/imax), float values in double (dsum/dmin/dmax).
struct GroupRow {
  std::uint64_t key_bits{0};
  std::uint64_t count{0};
  double dsum{0}, dmin{0}, dmax{0};
  std::int64_t isum{0}, imin{0}, imax{0};
};

struct GroupBy {
  DType key_type{DType::u32};
  DType value_type{DType::f64};
  bool has_values{false};
  std::vector<GroupRow> rows;  // sorted by key (numeric order of key_type)
  EngineStats gpu;
  Report report;
};

// keys/values are raw arrays of key_type / value_type (values may be empty when only counts are
// wanted: pass value_count 0 and has_values false). Throws InputError when the lengths differ.
GroupBy groupby(DType key_type, const void* keys, std::size_t n, DType value_type, const void* values,
                std::size_t value_count, bool has_values, const Options& opts = {});

// CSV as the CLI writes it: header "key,<aggs...>", one row per key.
void write_groupby_csv(std::ostream& os, const GroupBy& g, const std::vector<AggKind>& aggs);

// ---------------------------------------------------------------------------------------------
// Data generators (also behind `tandem gen zipf` and `tandem gen text`).

// n Zipf-distributed ranks in [0, distinct): P(rank r) ~ 1/(r+1)^exponent (exponent 0: uniform).
// Deterministic for a seed, whatever the thread count.
std::vector<std::uint64_t> zipf_ranks(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed);
// Ranks turned into keys scattered over the key range by a bijection, scatter32 (rank 0 is not
// key 0).
std::vector<std::uint32_t> zipf_keys_u32(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed);
std::vector<std::uint64_t> zipf_keys_u64(std::size_t n, std::uint64_t distinct, double exponent, std::uint64_t seed);
// A vocabulary of `words` distinct pseudo-words (lengths 1..14, every 101st word 40..60 bytes long)
// and ~`bytes` of text drawing them Zipf(exponent), separated by spaces, punctuation and newlines.
std::vector<std::string> make_vocabulary(std::size_t words, std::uint64_t seed);
std::string zipf_text(std::size_t bytes, const std::vector<std::string>& vocab, double exponent, std::uint64_t seed);

// Engine stats as readable lines (for Report notes / --explain).
void explain_stats(Report& r, const EngineStats& s);

}  // namespace tandem::mapreduce
