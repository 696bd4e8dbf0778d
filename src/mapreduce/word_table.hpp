// The CPU word count's table: open addressing with linear probing, one 32-byte slot per distinct
// word holding a 16-byte key, the count and where the word is in the text (no copy of it).
//
// A word of at most 16 bytes is its own key: its bytes, zero above them (a word has no zero byte,
// so the key alone tells the word and its length). A longer word's key is its hash and its length
// shifted up a byte (a low zero byte under a nonzero one: never a short word's key), and equal keys
// are confirmed in the text. A slot's home is the top bits of the key's hash, so the words of hash
// range p of P lie in slots [p * cap / P, (p + 1) * cap / P) of any table and the run of full slots
// after it: for_each_in_range walks one range of a table without touching the rest.
//
// A table of 64 KiB or more takes its slots from the zeroed-block pool (word_slot_pool.hpp): the
// next word count's tables reuse pages already faulted in instead of every thread faulting fresh
// zero pages and unmapping them again (page faults and TLB shootdowns that grow with the threads).
#pragma once
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "mapreduce/word_slot_pool.hpp"

namespace tandem::mapreduce::detail {

static_assert(std::endian::native == std::endian::little, "word keys are read as little-endian integers");

// wyhash's multiply-and-fold mix.
inline std::uint64_t mum(std::uint64_t a, std::uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(r >> 64) ^ static_cast<std::uint64_t>(r);
}
inline constexpr std::uint64_t kWordSeed0 = 0xa0761d6478bd642fULL, kWordSeed1 = 0xe7037ed1a0b428dbULL,
                               kWordSeed2 = 0x8ebc6af09c88c6e3ULL;

// The low `len` (0..8) bytes of w, zero above them.
inline std::uint64_t low_bytes(std::uint64_t w, std::size_t len) {
  return len == 0 ? 0 : w & (~std::uint64_t{0} >> (64 - 8 * len));
}

// The len (0..8) bytes at p as an integer, zero above them; `avail` bytes may be read from p.
inline std::uint64_t load_bytes(const char* p, std::size_t len, std::size_t avail) {
  std::uint64_t w = 0;
  if (avail >= 8) {
    std::memcpy(&w, p, 8);
    return low_bytes(w, len);
  }
  std::memcpy(&w, p, len);
  return w;
}

inline constexpr std::size_t kShortWord = 16;  // longest word that is its own key

struct WordKey {
  std::uint64_t k0, k1;
  bool operator==(const WordKey&) const = default;
  std::uint64_t hash() const { return mum(k0 ^ kWordSeed0, k1 ^ kWordSeed1); }
  bool is_short() const { return (k1 & 0xff) != 0 || k1 == 0; }
  // The word's length (short words: their nonzero bytes).
  std::size_t length() const {
    if (!is_short()) return static_cast<std::size_t>(k1 >> 8);
    return k1 ? 16 - std::countl_zero(k1) / 8 : 8 - std::countl_zero(k0) / 8;
  }
};

// Masks that keep a short word's bytes of the two 8-byte loads at its start: kShortKeyMask[len].
struct ShortKeyMask {
  std::uint64_t m0, m1;
};
inline constexpr auto kShortKeyMask = [] {
  std::array<ShortKeyMask, kShortWord + 1> t{};
  const auto low = [](std::size_t bytes) {
    return bytes >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * bytes)) - 1;
  };
  for (std::size_t len = 0; len <= kShortWord; ++len) t[len] = {low(len), len > 8 ? low(len - 8) : 0};
  return t;
}();

// The key of the word text[b, b + len) (len >= 1) of a text of n bytes.
inline WordKey word_key(const char* text, std::size_t n, std::size_t b, std::size_t len) {
  const char* p = text + b;
  if (len <= kShortWord) {
    if (n - b >= 16) [[likely]] {  // two loads and two masks from a table: no branch on the length
      std::uint64_t w0, w1;
      std::memcpy(&w0, p, 8);
      std::memcpy(&w1, p + 8, 8);
      return {w0 & kShortKeyMask[len].m0, w1 & kShortKeyMask[len].m1};
    }
    const std::size_t l0 = std::min<std::size_t>(len, 8);
    return {load_bytes(p, l0, n - b), load_bytes(p + l0, len - l0, n - b - l0)};
  }
  std::uint64_t h = len ^ kWordSeed0;
  std::size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = mum(h ^ w, kWordSeed1);
  }
  if (i < len) h = mum(h ^ load_bytes(p + i, len - i, n - b - i) ^ kWordSeed2, kWordSeed1);
  return {h, static_cast<std::uint64_t>(len) << 8};
}

struct WordSlot {
  WordKey key;
  std::uint64_t count;   // 0: empty
  std::uint64_t offset;  // of one occurrence in the text
};

// Zeroed memory for `cap` slots: from the zeroed-block pool when large, else calloc. A pooled
// block goes back with its used slots cleared (reading the untouched ones costs no memory).
class SlotMemory {
 public:
  static constexpr std::size_t kPooledBytes = std::size_t{64} << 10;
  SlotMemory() = default;
  explicit SlotMemory(std::size_t cap) : cap_(cap) {
    const std::size_t bytes = cap * sizeof(WordSlot);
    if (bytes >= kPooledBytes) {
      pooled_ = true;
      p_ = static_cast<WordSlot*>(take_zeroed_block(bytes));
    } else {
      p_ = static_cast<WordSlot*>(std::calloc(cap, sizeof(WordSlot)));
      if (!p_) throw std::bad_alloc();
    }
  }
  SlotMemory(SlotMemory&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), cap_(std::exchange(o.cap_, 0)), pooled_(std::exchange(o.pooled_, false)) {}
  SlotMemory& operator=(SlotMemory&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(cap_, o.cap_);
    std::swap(pooled_, o.pooled_);
    return *this;
  }
  ~SlotMemory() {
    if (!pooled_) {
      std::free(p_);
      return;
    }
    for (std::size_t i = 0; i < cap_; ++i)
      if (p_[i].count) p_[i] = WordSlot{};
    give_zeroed_block(p_, cap_ * sizeof(WordSlot));
  }
  WordSlot& operator[](std::size_t i) const { return p_[i]; }

 private:
  WordSlot* p_{nullptr};
  std::size_t cap_{0};
  bool pooled_{false};
};

class WordTable {
 public:
  // cap: a power of two >= 2. skip_bits: top hash bits that are the same for every word the table
  // will hold (a table of one hash range), left out of the slot index.
  WordTable(const char* text, std::size_t n, std::size_t cap, int skip_bits = 0)
      : text_(text), n_(n), skip_(skip_bits) {
    allocate(cap);
  }

  // Adds `count` occurrences of the word with key k and one occurrence at text offset b.
  void add(const WordKey& k, std::uint64_t hash, std::size_t b, std::uint64_t count = 1) {
    // An empty slot's key is zero, which no word's key is: the key test comes first, the usual
    // case taking one branch.
    const bool is_short = k.is_short();
    for (std::size_t i = home(hash);; i = (i + 1) & mask_) {
      WordSlot& s = slots_[i];
      if (((s.key.k0 ^ k.k0) | (s.key.k1 ^ k.k1)) == 0 &&
          (is_short || std::memcmp(text_ + s.offset, text_ + b, k.length()) == 0)) [[likely]] {
        s.count += count;
        return;
      }
      if (s.count == 0) {
        s = {k, count, b};
        if (++size_ * 2 > mask_ + 1) grow();
        return;
      }
    }
  }
  // Adds one occurrence of text[b, b + len).
  void add_word(std::size_t b, std::size_t len) {
    const WordKey k = word_key(text_, n_, b, len);
    add(k, k.hash(), b);
  }
  // The slot a word of this hash is looked up in first (to prefetch it).
  const WordSlot* home_slot(std::uint64_t hash) const { return &slots_[home(hash)]; }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return mask_ + 1; }
  std::size_t grows() const { return grows_; }
  const WordSlot& slot(std::size_t i) const { return slots_[i]; }

  // Calls f(slot, hash) for every word of hash range `part` of `parts` (a power of two <=
  // capacity), reading only that range's slots and the run of full slots after it. For tables
  // made with skip_bits 0.
  template <class F>
  void for_each_in_range(std::size_t part, std::size_t parts, F&& f) const {
    const std::size_t per = capacity() / parts, begin = part * per, end = begin + per;
    const int range_shift = std::countr_zero(parts);
    auto visit = [&](const WordSlot& s) {
      const std::uint64_t h = s.key.hash();
      if (range_shift == 0 || (h >> (64 - range_shift)) == part) f(s, h);
    };
    for (std::size_t i = begin; i < end; ++i)
      if (slots_[i].count) visit(slots_[i]);
    for (std::size_t j = end & mask_; slots_[j].count && j != begin; j = (j + 1) & mask_)
      visit(slots_[j]);  // words pushed past the range (wrapping at the end)
  }

 private:
  std::size_t home(std::uint64_t hash) const { return static_cast<std::size_t>((hash << skip_) >> shift_); }
  void allocate(std::size_t cap) {
    slots_ = SlotMemory(cap);
    mask_ = cap - 1;
    shift_ = 64 - std::countr_zero(cap);
  }
  [[gnu::noinline]] void grow() {  // rare: kept out of add's loop so that add is inlined
    const SlotMemory old = std::move(slots_);
    const std::size_t old_cap = mask_ + 1;
    allocate(old_cap * 2);
    for (std::size_t i = 0; i < old_cap; ++i) {
      if (!old[i].count) continue;
      std::size_t j = home(old[i].key.hash());
      while (slots_[j].count) j = (j + 1) & mask_;
      slots_[j] = old[i];
    }
    ++grows_;
  }

  const char* text_;
  std::size_t n_;
  int skip_;
  SlotMemory slots_;
  std::size_t mask_{0};
  int shift_{64};
  std::size_t size_{0};
  std::size_t grows_{0};
};

}  // namespace tandem::mapreduce::detail
