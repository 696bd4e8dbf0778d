// The CPU word count's tables: open addressing with linear probing, one 32-byte slot per distinct
// word holding a 16-byte key, the count and, for a word of more than 16 bytes, where a copy of its
// bytes is; words of at most 11 bytes in a table of their own, 16-byte slots of the word's bytes and
// its count.
//
// A word of at most 16 bytes is its own key: its bytes, zero above them (a word has no zero byte,
// so the key alone tells the word and its length). A longer word's key is its hash and its length
// shifted up a byte (a low zero byte under a nonzero one: never a short word's key), and equal keys
// are confirmed on the bytes. A slot's home is the top bits of the key's hash, so the words of hash
// range p of P lie in slots [p * cap / P, (p + 1) * cap / P) of any table and the run of full slots
// after it.
//
// A table of 64 KiB or more takes its slots from the zeroed-block pool (core/zeroed_block_pool.hpp): the
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
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "core/zeroed_block_pool.hpp"

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
  // Multiplicative: tables use the top bits (two multiplies, no 128-bit product), and words differ
  // in their low bytes, which move every top bit.
  std::uint64_t hash() const { return k0 * kWordSeed0 ^ k1 * kWordSeed1; }
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

// The key of the word of len (1..kShortWord) bytes at p, 16 bytes of which may be read: two loads
// and two masks from a table, no branch on the length.
inline WordKey short_word_key(const char* p, std::size_t len) {
  std::uint64_t w0, w1;
  std::memcpy(&w0, p, 8);
  std::memcpy(&w1, p + 8, 8);
  return {w0 & kShortKeyMask[len].m0, w1 & kShortKeyMask[len].m1};
}

// The key of the word text[b, b + len) (len >= 1) of a text of n bytes.
inline WordKey word_key(const char* text, std::size_t n, std::size_t b, std::size_t len) {
  const char* p = text + b;
  if (len <= kShortWord) {
    if (n - b >= 16) [[likely]]
      return short_word_key(p, len);
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

// Whether the len (> 8) bytes at a and b are the same: 8 bytes at a time, the last 8 read where
// they end; inline, where a call to memcmp cost the counting loop 6 % of its time.
inline bool same_bytes(const char* a, const char* b, std::size_t len) {
  const auto load = [](const char* p) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  std::uint64_t diff = load(a + len - 8) ^ load(b + len - 8);
  for (std::size_t i = 0; i + 8 < len; i += 8) diff |= load(a + i) ^ load(b + i);
  return diff == 0;
}

// Asks for every cache line of the `bytes` bytes at p (ForWrite: they are about to be written): a
// stream of requests the memory system overlaps, where a line first touched by a lookup would wait
// for it alone.
template <bool ForWrite = false>
void prefetch_lines(const void* p, std::size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(c + b, ForWrite ? 1 : 0, 3);
}

struct WordSlot {
  WordKey key;
  std::uint64_t count;  // 0: empty
  const char* bytes;    // the word's bytes, when the key does not hold them (a long key)
  bool used() const { return count != 0; }
  std::uint64_t hash() const { return key.hash(); }
};

// Copies of a table's long words that recur, one per distinct word, packed into blocks. A slot
// points at its word's first occurrence in the text and, once the word is met again, at a copy, so
// that later comparisons read lines the thread keeps in cache, not an occurrence anywhere in the
// text (on the development VM a 2-thread merge 12 % shorter). Words met once are not copied: at
// 16 threads most long words are, and copying each cost the count about 2 %.
class WordCopies {
 public:
  // text: where the words are counted from (none: nothing is copied).
  explicit WordCopies(std::string_view text = {}) : text_(text) {}
  // What a slot keeps for a word it holds at `held`, met again at `now`: a copy of the word
  // when `held` is in the text (made from `now`, which is in cache), else `held`.
  const char* recurring(const char* held, const char* now, std::size_t len) {
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(held),
                         first = reinterpret_cast<std::uintptr_t>(text_.data());
    return at - first < text_.size() ? copy(now, len) : held;
  }

 private:
  const char* copy(const char* p, std::size_t len) {
    if (len > left_) next_block(len);
    char* at = next_;
    std::memcpy(at, p, len);
    next_ += len;
    left_ -= len;
    return at;
  }
  static constexpr std::size_t kBlockBytes = std::size_t{32} << 10;
  void next_block(std::size_t len) {
    const std::size_t bytes = std::max(kBlockBytes, len);
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
    next_ = blocks_.back().get();
    left_ = bytes;
  }
  std::string_view text_;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_{nullptr};
  std::size_t left_{0};
};

// Words of at most kInlineWord bytes are counted in 16-byte slots (InlineSlot): their first 8
// bytes, then bytes 8..10 under a 40-bit count. Over 90 % of a text's words fit, and a table of
// them is half the bytes of one of WordSlots: fewer cache lines to miss and to merge.
inline constexpr std::size_t kInlineWord = 11;
inline constexpr int kInlineCountShift = 24;
inline constexpr std::uint64_t kInlineOne = std::uint64_t{1} << kInlineCountShift;
inline constexpr std::uint64_t kInlineKeyMask = kInlineOne - 1;
// A thread counts at most (bytes + 1) / 2 words, so texts shorter than this never carry a 40-bit
// count out of its bits.
inline constexpr std::size_t kInlineMaxText = std::size_t{1} << (64 - kInlineCountShift);

struct InlineSlot {
  std::uint64_t k0;    // bytes 0..7 (zero-padded): never zero for a word
  std::uint64_t rest;  // bytes 8..10 in the low 24 bits, the count above them; 0: empty
  bool used() const { return rest != 0; }
  WordKey key() const { return {k0, rest & kInlineKeyMask}; }
  std::uint64_t count() const { return rest >> kInlineCountShift; }
  std::uint64_t hash() const { return key().hash(); }
};

// Tables of 64 KiB or more come from the zeroed-block pool.
inline constexpr std::size_t kPooledSlotBytes = std::size_t{64} << 10;

// Zeroed memory for `cap` slots: from the zeroed-block pool when large, else calloc. A pooled
// block goes back with its used slots cleared (reading the untouched ones costs no memory).
template <class Slot>
class SlotMemory {
 public:
  SlotMemory() = default;
  explicit SlotMemory(std::size_t cap) : cap_(cap) {
    const std::size_t bytes = cap * sizeof(Slot);
    if (bytes >= kPooledSlotBytes) {
      pooled_ = true;
      p_ = static_cast<Slot*>(take_zeroed_block(bytes));
    } else {
      p_ = static_cast<Slot*>(std::calloc(cap, sizeof(Slot)));
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
    if (pooled_)
      for (std::size_t i = 0; i < cap_; ++i)
        if (p_[i].used()) p_[i] = Slot{};
    release_zeroed();
  }
  // Gives the memory back now, its slots known to be zero (no pass over them).
  void release_zeroed() {
    if (pooled_) give_zeroed_block(p_, cap_ * sizeof(Slot));
    else std::free(p_);
    p_ = nullptr;
    cap_ = 0;
    pooled_ = false;
  }
  Slot& operator[](std::size_t i) const { return p_[i]; }

 private:
  Slot* p_{nullptr};
  std::size_t cap_{0};
  bool pooled_{false};
};

// A table's words grouped by hash range: range p's are slots [start[p], start[p + 1]).
template <class Slot>
struct RangedWords {
  std::unique_ptr<Slot[]> slots;
  std::vector<std::size_t> start;
  std::size_t size() const { return start.back(); }
  std::span<const Slot> range(std::size_t p) const { return {slots.get() + start[p], start[p + 1] - start[p]}; }
};

// What both tables share: slots at their hash's home, linear probing, doubling at a load of 1/2
// (or 3/4, see WordTable).
template <class Slot>
class OpenTable {
 public:
  // The table moved from is left empty, with no slots: its destructor touches none.
  OpenTable(OpenTable&& o) noexcept
      : slots_(std::move(o.slots_)),
        mask_(std::exchange(o.mask_, 0)),
        shift_(o.shift_),
        skip_(o.skip_),
        load_quarters_(o.load_quarters_),
        grow_above_(std::exchange(o.grow_above_, 0)),
        size_(std::exchange(o.size_, 0)),
        grows_(o.grows_) {}
  OpenTable& operator=(OpenTable&&) = delete;
  ~OpenTable() {
    if (size_ == 0) {
      slots_.release_zeroed();  // no word: every slot is zero (drained or never used)
    } else if (size_ * 8 >= capacity()) {
      // Dense: clearing every slot beats testing each (a branch that mispredicts often).
      for (std::size_t i = 0; i <= mask_; ++i) slots_[i] = Slot{};
      slots_.release_zeroed();
    }  // else SlotMemory clears the few used slots, leaving untouched pages untouched
  }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return mask_ + 1; }
  std::size_t grows() const { return grows_; }
  const Slot& slot(std::size_t i) const { return slots_[i]; }
  // Asks for every cache line of the slots, for writing (prefetch_lines).
  void prefetch_slots() const { prefetch_lines<true>(&slots_[0], capacity() * sizeof(Slot)); }

  // Gives the slots back when the table holds no word (drained), leaving it with none.
  void release_drained() {
    if (size_ != 0) return;  // its slots are not all zero: the destructor clears them
    slots_.release_zeroed();
    mask_ = 0;
  }

  // Counts the words of each of `parts` hash ranges (a power of two >= 2) as they enter, so that
  // drain_by_range(parts) needs no pass to count them. Before the first word.
  void count_ranges(std::size_t parts) {
    range_words_.assign(parts, 0);
    range_shift_ = 64 - std::countr_zero(parts);
  }

  // Moves every word out, grouped by hash range (`parts` a power of two), and leaves the table
  // empty. For the thread that filled the table: its slots are cleared while they are in that
  // core's cache, and whoever merges a range then reads that range's words only, not the sparse
  // slots of the whole table. For tables made with skip_bits 0.
  RangedWords<Slot> drain_by_range(std::size_t parts) {
    const int range_shift = std::countr_zero(parts);
    const auto range_of = [&](const Slot& s) {
      return range_shift == 0 ? 0 : static_cast<std::size_t>(s.hash() >> (64 - range_shift));
    };
    // Without a branch on whether a slot is used (about half are, at random: a branch on it
    // mispredicts on every other slot): an empty slot's count goes to range 0 as 0 and its copy to
    // a spare slot past the end.
    RangedWords<Slot> out{std::make_unique_for_overwrite<Slot[]>(size_ + 1), std::vector<std::size_t>(parts + 1, 0)};
    if (range_words_.size() == parts) {  // counted as the words came in (count_ranges)
      std::copy(range_words_.begin(), range_words_.end(), out.start.begin() + 1);
      std::fill(range_words_.begin(), range_words_.end(), 0);
    } else {
      for (std::size_t i = 0; i <= mask_; ++i) out.start[range_of(slots_[i]) + 1] += slots_[i].used();
    }
    for (std::size_t p = 0; p < parts; ++p) out.start[p + 1] += out.start[p];
    std::vector<std::size_t> next(out.start.begin(), out.start.end() - 1);
    for (std::size_t i = 0; i <= mask_; ++i) {
      const bool used = slots_[i].used();
      std::size_t& at = next[range_of(slots_[i])];
      out.slots[used ? at : size_] = slots_[i];
      at += used;
      slots_[i] = Slot{};
    }
    size_ = 0;
    return out;
  }

 protected:
  // cap: a power of two >= 2. skip_bits: top hash bits that are the same for every word the table
  // will hold (a table of one hash range), left out of the slot index. load_quarters: 2 or 3, the
  // load (in quarters) beyond which it doubles.
  OpenTable(std::size_t cap, int skip_bits, int load_quarters = 2) : skip_(skip_bits), load_quarters_(load_quarters) {
    allocate(cap);
  }

  std::size_t home(std::uint64_t hash) const { return static_cast<std::size_t>((hash << skip_) >> shift_); }
  // After a new word of this hash took a slot.
  void added(std::uint64_t hash) {
    if (range_shift_ < 64) ++range_words_[hash >> range_shift_];
    if (++size_ > grow_above_) grow();
  }

  SlotMemory<Slot> slots_;
  std::size_t mask_{0};
  int shift_{64};
  int range_shift_{64};                   // 64: ranges not counted (count_ranges)
  std::vector<std::size_t> range_words_;  // words per hash range, when counted

 private:
  void allocate(std::size_t cap) {
    slots_ = SlotMemory<Slot>(cap);
    mask_ = cap - 1;
    shift_ = 64 - std::countr_zero(cap);
    grow_above_ = cap * static_cast<std::size_t>(load_quarters_) / 4;
  }
  [[gnu::noinline]] void grow() {  // rare: kept out of the callers' loops so that they are inlined
    const SlotMemory<Slot> old = std::move(slots_);
    const std::size_t old_cap = mask_ + 1;
    allocate(old_cap * 2);
    for (std::size_t i = 0; i < old_cap; ++i) {
      if (!old[i].used()) continue;
      std::size_t j = home(old[i].hash());
      while (slots_[j].used()) j = (j + 1) & mask_;
      slots_[j] = old[i];
    }
    ++grows_;
  }

  int skip_;
  int load_quarters_;
  std::size_t grow_above_{0};
  std::size_t size_{0};
  std::size_t grows_{0};
};

// Words of any length: their WordKey, count and (a long key) where a copy of their bytes is. A
// thread's table of long words (a few percent of the words it counts, a third of the distinct ones,
// and how many varies much between parts of a text) fills to 3/4 before it doubles: grows cost more
// than a few longer probes.
class WordTable : public OpenTable<WordSlot> {
 public:
  // copies: where the bytes of a recurring long word are copied (a thread counting text); none,
  // and the table keeps the pointer it is given (a merge of tables whose words outlive it).
  explicit WordTable(std::size_t cap, int skip_bits = 0, int load_quarters = 2, WordCopies* copies = nullptr)
      : OpenTable(cap, skip_bits, load_quarters), copies_(copies) {}

  // Adds `count` occurrences of the word with key k, whose bytes are at `bytes`.
  void add(const WordKey& k, std::uint64_t hash, const char* bytes, std::uint64_t count = 1) {
    if (k.is_short()) add_key<true>(k, hash, nullptr, count);
    else add_key<false>(k, hash, bytes, count);
  }
  // Adds `count` occurrences of the word whose key k holds it (is_short).
  void add_short(const WordKey& k, std::uint64_t hash, std::uint64_t count) { add_key<true>(k, hash, nullptr, count); }
  // Adds one occurrence of text[b, b + len) of a text of n bytes.
  void add_word(const char* text, std::size_t n, std::size_t b, std::size_t len) {
    const WordKey k = word_key(text, n, b, len);
    add(k, k.hash(), text + b);
  }

 private:
  template <bool Short>
  void add_key(const WordKey& k, std::uint64_t hash, const char* bytes, std::uint64_t count) {
    // An empty slot's key is zero, which no word's key is: the key test comes first, the usual
    // case taking one branch.
    for (std::size_t i = home(hash);; i = (i + 1) & mask_) {
      WordSlot& s = slots_[i];
      if (((s.key.k0 ^ k.k0) | (s.key.k1 ^ k.k1)) == 0 && (Short || same_bytes(s.bytes, bytes, k.length())))
          [[likely]] {
        s.count += count;
        if (!Short && copies_) s.bytes = copies_->recurring(s.bytes, bytes, k.length());
        return;
      }
      if (s.count == 0) {
        s = {k, count, Short ? nullptr : bytes};
        added(hash);
        return;
      }
    }
  }

  WordCopies* copies_;
};

// Words of at most kInlineWord bytes, whose keys (word_key's) are their bytes: k1 < 2^24.
class InlineWordTable : public OpenTable<InlineSlot> {
 public:
  explicit InlineWordTable(std::size_t cap) : OpenTable(cap, 0) {}

  void add(std::uint64_t k0, std::uint64_t k1) {
    // As WordTable::add: an empty slot's k0 is zero, which no word's is. No skip bits: the home is
    // the hash's top bits.
    const std::uint64_t hash = WordKey{k0, k1}.hash();
    for (std::size_t i = hash >> shift_;; i = (i + 1) & mask_) {
      InlineSlot& s = slots_[i];
      if (((s.k0 ^ k0) | ((s.rest ^ k1) & kInlineKeyMask)) == 0) [[likely]] {
        s.rest += kInlineOne;
        return;
      }
      if (s.rest == 0) {
        s = {k0, k1 | kInlineOne};
        added(hash);
        return;
      }
    }
  }
};

}  // namespace tandem::mapreduce::detail
