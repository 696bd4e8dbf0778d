// Dictionary encoding of one key column: every row gets the rank of its key among the column's
// distinct keys in key order (so codes sort as keys do), a missing row the code after them all.
//
// Each thread numbers the keys of its own contiguous rows in an open-addressing table (no
// sharing); the distinct keys of all threads are then sorted once, which gives each thread's
// local numbers their ranks, and a last pass replaces local numbers by ranks. The ranks do not
// depend on the thread count.
#pragma once
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <parallel/algorithm>
#include <vector>

namespace tandem::cpu_groupby {

inline constexpr std::uint32_t kMissingCode = UINT32_MAX;  // a missing row, before ranks are known

// Key → id in first-seen order, with a row holding each key. Linear probing at load <= 1/2.
template <class Key, class Hash>
class KeyIds {
 public:
  KeyIds() { slots_.assign(64, Slot{Key{}, kEmpty}); }

  std::uint32_t id(const Key& k, std::size_t row) {
    std::size_t i = Hash{}(k) & (slots_.size() - 1);
    while (true) {
      Slot& s = slots_[i];
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
  const std::vector<Key>& keys() const { return keys_; }
  const std::vector<std::size_t>& rows() const { return rows_; }

 private:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    Key key;
    std::uint32_t id;
  };
  void grow() {
    std::vector<Slot> next(slots_.size() * 2, Slot{Key{}, kEmpty});
    for (std::uint32_t id = 0; id < keys_.size(); ++id) {
      std::size_t i = Hash{}(keys_[id]) & (next.size() - 1);
      while (next[i].id != kEmpty) i = (i + 1) & (next.size() - 1);
      next[i] = Slot{keys_[id], id};
    }
    slots_.swap(next);
  }
  std::vector<Slot> slots_;
  std::vector<Key> keys_;
  std::vector<std::size_t> rows_;
};

// The distinct keys in key order, a row holding each, and whether any row was missing.
template <class Key>
struct Dictionary {
  std::vector<Key> sorted;
  std::vector<std::size_t> rows;
  bool missing{false};
  std::uint64_t card() const { return sorted.size() + (missing ? 1 : 0); }
};

// codes[i] = rank of load(i) among the distinct keys (Less orders them), or sorted.size() when
// !present(i).
template <class Key, class Hash, class Less, class Load, class Present>
Dictionary<Key> encode_dictionary(std::size_t n, int threads, Load load, Present present, Less less,
                                  std::uint32_t* codes) {
  const int T = std::max(1, std::min<int>(threads, static_cast<int>(n / 4096 + 1)));
  std::vector<KeyIds<Key, Hash>> tables(T);
  int any_missing = 0;
#pragma omp parallel num_threads(T) reduction(| : any_missing)
  {
    const int t = omp_get_thread_num();
    auto& table = tables[t];
    for (std::size_t i = n * t / T, end = n * (t + 1) / T; i < end; ++i) {
      if (!present(i)) {
        codes[i] = kMissingCode;
        any_missing = 1;
      } else {
        codes[i] = table.id(load(i), i);
      }
    }
  }
  struct Entry {
    Key key;
    std::uint32_t thread, local;
  };
  std::vector<Entry> all;
  for (int t = 0; t < T; ++t)
    for (std::uint32_t j = 0; j < tables[t].keys().size(); ++j) all.push_back({tables[t].keys()[j], std::uint32_t(t), j});
  __gnu_parallel::sort(all.begin(), all.end(), [&](const Entry& a, const Entry& b) { return less(a.key, b.key); },
                       __gnu_parallel::default_parallel_tag(T));
  Dictionary<Key> d;
  d.missing = any_missing != 0;
  std::vector<std::vector<std::uint32_t>> rank(T);
  for (int t = 0; t < T; ++t) rank[t].resize(tables[t].keys().size());
  for (std::size_t j = 0; j < all.size(); ++j) {
    if (j == 0 || less(all[j - 1].key, all[j].key)) {
      d.sorted.push_back(all[j].key);
      d.rows.push_back(tables[all[j].thread].rows()[all[j].local]);
    }
    rank[all[j].thread][all[j].local] = static_cast<std::uint32_t>(d.sorted.size() - 1);
  }
  const auto missing_code = static_cast<std::uint32_t>(d.sorted.size());
#pragma omp parallel num_threads(T)
  {
    const int t = omp_get_thread_num();
    const std::uint32_t* r = rank[t].data();
    for (std::size_t i = n * t / T, end = n * (t + 1) / T; i < end; ++i)
      codes[i] = codes[i] == kMissingCode ? missing_code : r[codes[i]];
  }
  return d;
}

}  // namespace tandem::cpu_groupby
