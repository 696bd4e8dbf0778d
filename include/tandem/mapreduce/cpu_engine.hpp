// The CPU engine: cpu_mapreduce runs any job (tandem/mapreduce/jobs.hpp) on OpenMP threads, each
// with a local open-addressing table that spills into hash partitions at a size limit, followed by
// a partitioned parallel merge.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/hash.hpp"
#include "tandem/cuda/hd.hpp"
#include "tandem/mapreduce/detail/local_table.hpp"
#include "tandem/mapreduce/engine_options.hpp"

namespace tandem::mapreduce {

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

}  // namespace tandem::mapreduce
