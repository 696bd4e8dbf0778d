// Internal to the CPU engine (cpu_mapreduce in tandem/mapreduce/cpu_engine.hpp): each thread's table.
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tandem::mapreduce::detail {

// Open-addressing table with linear probing (power-of-two capacity, load <= 1/2).
template <class K, class V>
class LocalTable {
 public:
  explicit LocalTable(std::size_t expected = 16) { rehash(std::max<std::size_t>(16, std::bit_ceil(expected * 2))); }

  template <class R>
  void upsert(const K& k, const V& v, std::uint64_t h, R&& reduce) {
    std::size_t i = h & mask_;
    while (used_[i]) {
      if (hashes_[i] == h && keys_[i] == k) {
        reduce(vals_[i], v);
        return;
      }
      i = (i + 1) & mask_;
    }
    used_[i] = 1;
    hashes_[i] = h;
    keys_[i] = k;
    vals_[i] = v;
    if (++size_ * 2 > keys_.size()) rehash(keys_.size() * 2);
  }
  std::size_t size() const { return size_; }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < keys_.size(); ++i)
      if (used_[i]) f(keys_[i], vals_[i], hashes_[i]);
  }
  void clear() {
    std::fill(used_.begin(), used_.end(), 0);
    size_ = 0;
  }

 private:
  void rehash(std::size_t cap) {
    std::vector<K> k(cap);
    std::vector<V> v(cap);
    std::vector<std::uint64_t> h(cap);
    std::vector<unsigned char> u(cap, 0);
    const std::size_t m = cap - 1;
    for (std::size_t i = 0; i < keys_.size(); ++i) {
      if (!used_[i]) continue;
      std::size_t j = hashes_[i] & m;
      while (u[j]) j = (j + 1) & m;
      u[j] = 1;
      k[j] = std::move(keys_[i]);
      v[j] = std::move(vals_[i]);
      h[j] = hashes_[i];
    }
    keys_.swap(k);
    vals_.swap(v);
    hashes_.swap(h);
    used_.swap(u);
    mask_ = m;
  }

  std::vector<K> keys_;
  std::vector<V> vals_;
  std::vector<std::uint64_t> hashes_;
  std::vector<unsigned char> used_;
  std::size_t mask_{0};
  std::size_t size_{0};
};

}  // namespace tandem::mapreduce::detail
