// Dictionary encoding of one key column: every row's key gets its rank among the column's
// distinct keys in key order (so codes sort as keys do), a missing row the code after them all.
//
// Threads take fixed chunks of rows in turn and number the keys of their chunks in their own
// open-addressing tables (no sharing; probes are batched with prefetches so a table larger than
// the cache costs throughput, not latency). The distinct keys of all threads are then sorted
// once, which gives every thread's numbers their ranks; rows keep their thread's number and are
// turned into ranks where the codes are read (LocalCodes::codes). Ranks do not depend on the
// thread count.
#pragma once
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <parallel/algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/scratch.hpp"
#include "sort/cpu_radix.hpp"
#include "tandem/core/distinct_estimate.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::cpu_groupby {

inline constexpr std::uint32_t kMissingCode = UINT32_MAX;
inline constexpr unsigned kChunkShift = 16;  // rows are numbered in chunks of 2^16

// Each row's number from the thread that saw it, and each thread's numbers' ranks.
struct LocalCodes {
  Scratch<std::uint32_t> local;              // per row; kMissingCode for a missing row
  std::vector<std::uint16_t> owner;          // per chunk: its thread (empty: local holds ranks)
  std::vector<Scratch<std::uint32_t>> rank;  // per thread: number -> rank
  std::uint32_t missing{0};                  // a missing row's code: the number of distinct keys

  // Replaces every row's number by its code, when the rank tables outgrow a core's cache: each
  // later read of the codes is then a plain copy, not a random lookup.
  void settle(int threads) {
    std::size_t table = 0;
    for (const auto& r : rank) table += r.size();
    if (owner.empty() || table < (std::size_t{1} << 15)) return;
    const std::size_t n = local.size();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::size_t c = 0; c < owner.size(); ++c) {
      const std::size_t b = c << kChunkShift, e = std::min(n, (c + 1) << kChunkShift);
      codes(b, e, local.data() + b);
    }
    owner.clear();
    rank.clear();
  }

  // The codes of rows [begin, end) into out[0, end - begin).
  void codes(std::size_t begin, std::size_t end, std::uint32_t* out) const {
    for (std::size_t i = begin; i < end;) {
      const std::size_t stop = std::min(end, ((i >> kChunkShift) + 1) << kChunkShift);
      const std::uint32_t* r = owner.empty() ? nullptr : rank[owner[i >> kChunkShift]].data();
      for (; i < stop; ++i) {
        const std::uint32_t c = local[i];
        out[i - begin] = c == kMissingCode ? missing : r ? r[c] : c;  // out may be local itself
      }
    }
  }
};

// Key -> number in first-seen order, with a row holding each key. Linear probing, load <= 1/2.
template <class Key, class Hash>
class KeyIds {
 public:
  explicit KeyIds(std::size_t expected = 32) {
    slots_.assign(std::bit_ceil(std::max<std::size_t>(64, 2 * expected + 2)), Slot{Key{}, kEmpty});
    keys_.reserve(expected);
    rows_.reserve(expected);
  }

  void prefetch(std::uint64_t h) const { __builtin_prefetch(&slots_[h & (slots_.size() - 1)]); }
  std::uint32_t id(const Key& k, std::uint64_t h, std::size_t row) {
    std::size_t i = h & (slots_.size() - 1);
    while (true) {
      const Slot& s = slots_[i];
      if (s.id == kEmpty) break;
      if (s.key == k) return s.id;
      i = (i + 1) & (slots_.size() - 1);
    }
    const auto id = static_cast<std::uint32_t>(keys_.size());
    slots_[i] = Slot{k, id};
    keys_.push_back(k);
    rows_.push_back(row);
    if (keys_.size() * 2 > slots_.size()) grow();
    return id;
  }
  const Scratch<Key>& keys() const { return keys_; }
  const Scratch<std::size_t>& rows() const { return rows_; }

 private:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    Key key;
    std::uint32_t id;
  };
  void grow() {
    Scratch<Slot> next(slots_.size() * 2, Slot{Key{}, kEmpty});
    for (std::uint32_t id = 0; id < keys_.size(); ++id) {
      std::size_t i = Hash{}(keys_[id]) & (next.size() - 1);
      while (next[i].id != kEmpty) i = (i + 1) & (next.size() - 1);
      next[i] = Slot{keys_[id], id};
    }
    slots_.swap(next);
  }
  Scratch<Slot> slots_;
  Scratch<Key> keys_;
  Scratch<std::size_t> rows_;
};

// The distinct keys in key order, a row holding each, and whether any row was missing.
template <class Key>
struct Dictionary {
  Scratch<Key> sorted;
  std::vector<std::size_t> rows;
  bool missing{false};
  bool by_partition{false};  // numbered partition by partition (encode_by_partition), not per thread
  std::uint64_t card() const { return sorted.size() + (missing ? 1 : 0); }
};

// How many distinct keys the rows hold, estimated from an even sample of them (Chao1, a lower
// bound): what the tables start at, so that they seldom grow.
template <class Key, class Load, class Present, class Less>
std::size_t expected_distinct(std::size_t n, Load& load, Present& present, Less& less) {
  const std::size_t s = std::min<std::size_t>(n, 8192);
  std::vector<Key> sample;
  for (std::size_t j = 0; j < s; ++j)
    if (const std::size_t i = j * (n / s); present(i)) sample.push_back(load(i));
  std::sort(sample.begin(), sample.end(), less);
  distinct_estimate::Sample e;
  e.records = sample.size();
  e.total = n;
  for (std::size_t j = 0, run = 1; j < sample.size(); ++j, ++run) {
    if (j + 1 < sample.size() && !less(sample[j], sample[j + 1])) continue;
    e.distinct += 1;
    e.once += run == 1;
    e.twice += run == 2;
    run = 0;
  }
  return static_cast<std::size_t>(distinct_estimate::estimate(e, 0).chao1);
}

// The 64-bit words of a key whose order, most significant first, is the keys' order: the
// key itself for u64, key.radix_words() for a key type that has them; none for others.
template <class Key>
auto radix_words(const Key& k) {
  if constexpr (std::is_same_v<Key, std::uint64_t>) return std::array<std::uint64_t, 1>{k};
  else return k.radix_words();
}
template <class Key>
concept RadixSortable = std::is_same_v<Key, std::uint64_t> || requires(const Key& k) {
  k.radix_words();
};

// Sorts entries (each with a .key) by key: by a stable LSD radix sort of their keys' words when
// the key has them (a few passes over the digits that vary, instead of n log n comparisons),
// else by a comparison sort.
template <class Entry, class Less>
void sort_by_key(Scratch<Entry>& all, Less less, int threads) {
  using Key = decltype(Entry::key);
  const std::size_t n = all.size();
  if constexpr (RadixSortable<Key>) {
    if (n >= (std::size_t{1} << 12) && n < UINT32_MAX) {
      constexpr std::size_t W = std::tuple_size_v<decltype(radix_words(all[0].key))>;
      Scratch<std::uint32_t> order(n);
      Scratch<std::uint64_t> word(n);
      for (std::size_t w = W; w-- > 0;) {  // least significant word first, each pass stable
#pragma omp parallel for num_threads(threads) schedule(static)
        for (std::size_t j = 0; j < n; ++j) {
          const std::size_t at = w + 1 == W ? j : order[j];
          if (w + 1 == W) order[j] = static_cast<std::uint32_t>(j);
          word[j] = radix_words(all[at].key)[w];
        }
        detail::cpu_radix_sort<std::uint64_t, std::uint32_t>(word, order, false, threads);
      }
      Scratch<Entry> sorted(n);
#pragma omp parallel for num_threads(threads) schedule(static)
      for (std::size_t j = 0; j < n; ++j) sorted[j] = all[order[j]];
      all.swap(sorted);
      return;
    }
  }
  const auto by_key = [&](const Entry& a, const Entry& b) { return less(a.key, b.key); };
  if (n < (std::size_t{1} << 16) || threads == 1) std::sort(all.begin(), all.end(), by_key);
  else __gnu_parallel::sort(all.begin(), all.end(), by_key, __gnu_parallel::default_parallel_tag(threads));
}

// How many top bits of the key hash split the rows into partitions for encode_by_partition, or 0
// where a table per thread serves better: one thread, or tables that together stay within a
// server's last-level cache (32 MiB; a key takes two slots of up to 24 bytes at load <= 1/2).
// Many distinct keys met by every thread make every thread's table hold most of them
// (db-benchmark q10's id3 at K = 10: 10^6 keys, on 16 threads 7·10^6 entries to sort and 800 MB
// of tables against 10^6 and one partition's keys in a core's cache at a time); 10^5 keys on 2
// threads (q3 at K = 100) are numbered faster in their threads' 6 MB tables than placed by
// partition first (88 against 121 ms for 10^7 rows). Partitions of some 4,096 keys, at least
// four a thread, at most 2^12.
inline int dictionary_partition_bits(std::size_t expected_keys, int threads) {
  constexpr std::size_t kSharedCache = std::size_t{32} << 20;
  constexpr std::size_t kTableBytesPerKey = 48;
  if (threads < 2 || expected_keys < (std::size_t{1} << 14) ||
      expected_keys * static_cast<std::size_t>(threads) * kTableBytesPerKey <= kSharedCache)
    return 0;
  const std::size_t want = std::max<std::size_t>(expected_keys / 4096, 4 * static_cast<std::size_t>(threads));
  return std::min(12, static_cast<int>(std::bit_width(want - 1)));
}

// encode_dictionary by partition: each row's key and row scattered by the top `bits` bits of its
// hash (two passes over chunks of rows: count, then place, in row order), each partition's keys
// numbered in a table of its own on some thread, the distinct keys (no two partitions share one)
// sorted once, and every row's code written from its partition's entries. `out` gets ranks
// directly (no owner, no per-thread rank tables).
template <class Key, class Hash, class Less, class Load, class Present>
Dictionary<Key> encode_by_partition(std::size_t n, int threads, int bits, std::size_t expected, Load& load,
                                    Present& present, Less& less, LocalCodes& out, const std::atomic<bool>* stop) {
  const std::size_t P = std::size_t{1} << bits;
  const auto part_of = [bits](std::uint64_t h) { return static_cast<std::size_t>(h >> (64 - bits)); };
  // Rows per (block, partition), then where each block's rows of each partition start: blocks of
  // 2^16 rows or more, so that the counts take at most 2^22 words.
  const std::size_t chunks = std::min(std::max<std::size_t>((n + 0xFFFF) >> 16, 1),
                                      std::max<std::size_t>((std::size_t{1} << 22) / P, threads));
  const std::size_t block = (n + chunks - 1) / chunks;
  Scratch<std::size_t> at(chunks * P, 0);
  out.local.resize(n);
  int any_missing = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : any_missing)
  for (std::size_t c = 0; c < chunks; ++c) {
    if (stop && stop->load(std::memory_order_relaxed)) continue;
    std::size_t* count = at.data() + c * P;
    for (std::size_t i = c * block, end = std::min(n, (c + 1) * block); i < end; ++i) {
      if (!present(i)) {
        any_missing = 1;
        out.local[i] = kMissingCode;
        continue;
      }
      ++count[part_of(Hash{}(load(i)))];
    }
  }
  Dictionary<Key> d;
  if (stop && stop->load()) return d;
  d.missing = any_missing != 0;
  std::vector<std::size_t> part_start(P + 1, 0);
  for (std::size_t p = 0, sum = 0; p < P; ++p) {
    part_start[p] = sum;
    for (std::size_t c = 0; c < chunks; ++c) sum += std::exchange(at[c * P + p], sum);
    part_start[p + 1] = sum;
  }
  struct Entry {
    Key key;
    std::uint32_t row, id;
  };
  Scratch<Entry> placed(part_start[P]);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    std::size_t* next = at.data() + c * P;
    for (std::size_t i = c * block, end = std::min(n, (c + 1) * block); i < end; ++i) {
      if (!present(i)) continue;
      const Key k = load(i);
      placed[next[part_of(Hash{}(k))]++] = Entry{k, static_cast<std::uint32_t>(i), 0};
    }
  }
  at = Scratch<std::size_t>();
  // Each partition's keys numbered in first-seen (row) order, each with a row holding it.
  struct KeyRow {
    Key key;
    std::uint32_t row;
  };
  std::vector<Scratch<KeyRow>> keys(P);
  const std::size_t per_part = 2 * (expected / P) + 64;
  FirstException first;  // a table that cannot grow: no exception may leave the region
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t p = 0; p < P; ++p) {
    first.run([&] {
      const std::size_t b = part_start[p], e = part_start[p + 1];
      KeyIds<Key, Hash> table(std::min(e - b, per_part));
      for (std::size_t j = b; j < e; ++j) placed[j].id = table.id(placed[j].key, Hash{}(placed[j].key), j);
      Scratch<KeyRow>& mine = keys[p];
      mine.resize(table.keys().size());
      for (std::size_t k = 0; k < mine.size(); ++k) mine[k] = KeyRow{table.keys()[k], placed[table.rows()[k]].row};
    });
  }
  first.rethrow();
  // Every distinct key once, tagged with its partition, sorted: its place is its rank.
  std::vector<std::size_t> key_start(P + 1, 0);
  for (std::size_t p = 0; p < P; ++p) key_start[p + 1] = key_start[p] + keys[p].size();
  struct Ranked {
    Key key;
    std::uint32_t part, id;
  };
  Scratch<Ranked> all(key_start[P]);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t p = 0; p < P; ++p)
    for (std::size_t k = 0; k < keys[p].size(); ++k)
      all[key_start[p] + k] = Ranked{keys[p][k].key, static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(k)};
  sort_by_key(all, less, threads);
  const std::size_t D = all.size();
  Scratch<std::uint32_t> rank(D);  // by key_start[part] + id
  d.sorted.resize(D);
  d.rows.resize(D);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t j = 0; j < D; ++j) {
    const std::size_t slot = key_start[all[j].part] + all[j].id;
    rank[slot] = static_cast<std::uint32_t>(j);
    d.sorted[j] = all[j].key;
    d.rows[j] = keys[all[j].part][all[j].id].row;
  }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::size_t p = 0; p < P; ++p) {
    const std::uint32_t* r = rank.data() + key_start[p];
    for (std::size_t j = part_start[p]; j < part_start[p + 1]; ++j) out.local[placed[j].row] = r[placed[j].id];
  }
  out.owner.clear();
  out.rank.clear();
  out.missing = static_cast<std::uint32_t>(D);
  d.by_partition = true;
  return d;
}

// Numbers the rows' keys per thread into `out` and ranks them (Less orders keys); by partition
// where dictionary_partition_bits says so. `stop` lets load() end the pass early (a string too
// long for its key type): then the result is empty.
template <class Key, class Hash, class Less, class Load, class Present>
Dictionary<Key> encode_dictionary(std::size_t n, int threads, Load load, Present present, Less less, LocalCodes& out,
                                  const std::atomic<bool>* stop = nullptr) {
  const std::size_t chunks = (n + (std::size_t{1} << kChunkShift) - 1) >> kChunkShift;
  const int T = std::max(1, std::min<int>(threads, static_cast<int>(chunks)));
  const std::size_t expected = expected_distinct<Key>(n, load, present, less);
  if (const int bits = dictionary_partition_bits(expected, T); bits > 0 && n < UINT32_MAX)
    return encode_by_partition<Key, Hash>(n, T, bits, expected, load, present, less, out, stop);
  out.local.resize(n);
  out.owner.assign(chunks, 0);
  std::vector<KeyIds<Key, Hash>> tables(T);
  // Each thread lays out its own table: no copies of one.
  parallel_region(T, [&](int t, int) { tables[t] = KeyIds<Key, Hash>(expected); });
  int any_missing = 0;
  FirstException first;  // a table that cannot grow: no exception may leave the region
#pragma omp parallel for num_threads(T) schedule(dynamic, 1) reduction(| : any_missing)
  for (std::size_t c = 0; c < chunks; ++c) {
    if (stop && stop->load(std::memory_order_relaxed)) continue;
    first.run([&] {
      const int t = omp_get_thread_num();
      auto& table = tables[t];
      out.owner[c] = static_cast<std::uint16_t>(t);
      constexpr std::size_t kBatch = 16;
      Key keys[kBatch];
      std::uint64_t hashes[kBatch];
      for (std::size_t b = c << kChunkShift, end = std::min(n, (c + 1) << kChunkShift); b < end; b += kBatch) {
        const std::size_t m = std::min(kBatch, end - b);
        for (std::size_t j = 0; j < m; ++j) {
          if (!present(b + j)) continue;
          keys[j] = load(b + j);
          hashes[j] = Hash{}(keys[j]);
          table.prefetch(hashes[j]);
        }
        for (std::size_t j = 0; j < m; ++j) {
          const bool p = present(b + j);
          any_missing |= !p;
          out.local[b + j] = p ? table.id(keys[j], hashes[j], b + j) : kMissingCode;
        }
      }
    });
  }
  first.rethrow();
  Dictionary<Key> d;
  if (stop && stop->load()) return d;
  d.missing = any_missing != 0;
  struct Entry {
    Key key;
    std::uint32_t thread, local;
  };
  Scratch<Entry> all;
  std::size_t total = 0;
  for (const auto& t : tables) total += t.keys().size();
  all.reserve(total);
  for (int t = 0; t < T; ++t)
    for (std::uint32_t j = 0; j < tables[t].keys().size(); ++j)
      all.push_back({tables[t].keys()[j], std::uint32_t(t), j});
  sort_by_key(all, less, T);
  d.sorted.reserve(all.size());
  d.rows.reserve(all.size());
  out.rank.assign(T, {});
  for (int t = 0; t < T; ++t) out.rank[t].resize(tables[t].keys().size());
  for (std::size_t j = 0; j < all.size(); ++j) {
    if (j == 0 || less(all[j - 1].key, all[j].key)) {
      d.sorted.push_back(all[j].key);
      d.rows.push_back(tables[all[j].thread].rows()[all[j].local]);
    }
    out.rank[all[j].thread][all[j].local] = static_cast<std::uint32_t>(d.sorted.size() - 1);
  }
  out.missing = static_cast<std::uint32_t>(d.sorted.size());
  out.settle(T);
  return d;
}

}  // namespace tandem::cpu_groupby
