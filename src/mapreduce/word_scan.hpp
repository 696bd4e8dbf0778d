// The CPU word count's tokenizer: 64 bytes at a time classified into a bit mask (SSE2 where the
// target has it, a table otherwise; AVX2 where the CPU has it, chosen at run time by the caller),
// words found from the mask's 0/1 transitions. The same words and the same chunk rule as
// mapreduce::for_each_word.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#define TANDEM_WORD_MASK_AVX2 1
#endif

#include "tandem/mapreduce.hpp"

namespace tandem::mapreduce::detail {

// is_word_byte for every byte value.
inline const std::array<bool, 256> kWordByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = is_word_byte(static_cast<unsigned char>(c));
  return t;
}();

// Bit i set when p[i] is a word byte, i = 0..63 (the table version, any target).
inline std::uint64_t word_mask64_table(const char* p) {
  std::uint64_t m = 0;
  for (int i = 0; i < 64; ++i) m |= std::uint64_t{kWordByte[static_cast<unsigned char>(p[i])]} << i;
  return m;
}

// Bit i set when p[i] is a word byte, i = 0..63.
inline std::uint64_t word_mask64(const char* p) {
#if defined(__SSE2__)
  std::uint64_t m = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    // Unsigned "v <= limit" as min(v, limit) == v.
    const __m128i letter = _mm_sub_epi8(_mm_or_si128(x, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
    const __m128i digit = _mm_sub_epi8(x, _mm_set1_epi8('0'));
    __m128i w = _mm_cmpeq_epi8(_mm_min_epu8(letter, _mm_set1_epi8(25)), letter);
    w = _mm_or_si128(w, _mm_cmpeq_epi8(_mm_min_epu8(digit, _mm_set1_epi8(9)), digit));
    w = _mm_or_si128(w, _mm_cmpeq_epi8(x, _mm_set1_epi8('\'')));
    w = _mm_or_si128(w, _mm_cmpeq_epi8(x, _mm_set1_epi8('_')));
    w = _mm_or_si128(w, _mm_cmplt_epi8(x, _mm_setzero_si128()));  // bytes >= 0x80
    m |= std::uint64_t(static_cast<unsigned>(_mm_movemask_epi8(w))) << (16 * k);
  }
  return m;
#else
  return word_mask64_table(p);
#endif
}

#if TANDEM_WORD_MASK_AVX2
// Bit i set when p[i] is a word byte, i = 0..63, 32 bytes at a time by two nibble lookups: a byte
// is a word byte when the classes of its high nibble and of its low nibble share a bit. Classes:
// 1 '\'' (0x27), 2 digits (0x30-0x39), 4 A-O a-o (0x41-0x4F, 0x61-0x6F), 8 P-Z p-z (0x50-0x5A,
// 0x70-0x7A), 16 '_' (0x5F), 32 bytes >= 0x80. Only on a CPU with AVX2 (cpu_has_avx2).
[[gnu::target("avx2")]] inline std::uint64_t word_mask64_avx2(const char* p) {
  const __m256i high_class = _mm256_setr_epi8(0, 0, 1, 2, 4, 8 | 16, 4, 8, 32, 32, 32, 32, 32, 32, 32, 32,  //
                                              0, 0, 1, 2, 4, 8 | 16, 4, 8, 32, 32, 32, 32, 32, 32, 32, 32);
  // Low nibble 0: digit 0, P p; 1-6: digits, A-F a-f, Q-V q-v; 7: ', digit, G g, W w; 8-9:
  // digits, H-I h-i, X-Y x-y; A: J j, Z z; B-E: K-N k-n; F: O o, _. Every low nibble: >= 0x80.
  const __m256i low_class = _mm256_setr_epi8(
      32 | 2 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8,
      32 | 1 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 4 | 8, 32 | 4, 32 | 4, 32 | 4, 32 | 4, 32 | 4 | 16,  //
      32 | 2 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8,
      32 | 1 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 2 | 4 | 8, 32 | 4 | 8, 32 | 4, 32 | 4, 32 | 4, 32 | 4, 32 | 4 | 16);
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  std::uint64_t m = 0;
  for (int k = 0; k < 2; ++k) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32 * k));
    const __m256i high = _mm256_shuffle_epi8(high_class, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
    const __m256i low = _mm256_shuffle_epi8(low_class, _mm256_and_si256(x, nibble));
    const __m256i other = _mm256_cmpeq_epi8(_mm256_and_si256(high, low), _mm256_setzero_si256());
    m |= std::uint64_t(~static_cast<std::uint32_t>(_mm256_movemask_epi8(other))) << (32 * k);
  }
  return m;
}

// Whether this CPU runs word_mask64_avx2 and code built for target("avx2,bmi,bmi2").
inline bool cpu_has_avx2() {
  static const bool yes =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  return yes;
}
#endif

// A 64-byte classifier: word_mask64 or word_mask64_avx2.
using WordMaskFn = std::uint64_t (*)(const char*);

// How far ahead of the block being classified its text is asked for.
inline constexpr std::size_t kTextAhead = 512;

// Calls f(begin, length) for every word that starts inside [first, last) of text[0, n), as
// for_each_word does: a word crossing `last` is finished past it, one crossing `first` belongs to
// the previous chunk. An f that takes a third argument gets std::true_type where at least 16 bytes
// of the text from `begin` on may be read, else std::false_type.
template <WordMaskFn Mask = word_mask64, class F>
void scan_words(const char* text, std::size_t n, std::size_t first, std::size_t last, F&& f) {
  const auto call = [&](std::size_t b, std::size_t len, auto readable16) {
    if constexpr (std::is_invocable_v<F&, std::size_t, std::size_t, std::true_type>) f(b, len, readable16);
    else f(b, len);
  };
  // open: inside a word begun before the block (at `begin`); a word running into `first` is
  // open too but not ours (skip).
  std::uint64_t carry = first > 0 && first < n && kWordByte[static_cast<unsigned char>(text[first - 1])];
  bool open = carry != 0, skip = open;
  std::size_t begin = 0;
  for (std::size_t pos = first; pos < n; pos += 64) {
    std::uint64_t m;
    if (n - pos >= 64) {
      // The text is read once: asked for ahead without temporal locality, so that its lines do
      // not push the thread's tables out of L2 (16 threads on an H200 box's host: counting stage
      // 0.26 ms, 6 %, shorter; the same request kept in every level gained nothing).
      if (n - pos > kTextAhead) __builtin_prefetch(text + pos + kTextAhead, 0, 0);
      m = Mask(text + pos);
    } else {  // the text's last bytes, padded with separators
      char tail[64] = {};
      std::memcpy(tail, text + pos, n - pos);
      m = Mask(tail);
    }
    const std::uint64_t before = (m << 1) | carry;  // bit i: byte i - 1 is a word byte
    carry = m >> 63;
    std::uint64_t starts = m & ~before, ends = ~m & before;  // an end is the byte after a word
    // A block inside the chunk with 16 bytes to read after any word that starts in it.
    const bool inner = pos + 64 <= last && pos + 80 <= n;
    // Words of this chunk start before `last`.
    if (!inner) {
      if (last <= pos) starts = 0;
      else if (last - pos < 64) starts &= (std::uint64_t{1} << (last - pos)) - 1;
    }
    if (open) {
      if (!ends) {                             // the word goes on through the whole block
        if (skip && pos + 64 >= last) return;  // not ours, and none of ours starts before its end
        continue;
      }
      const std::size_t e = pos + static_cast<std::size_t>(__builtin_ctzll(ends));
      ends &= ends - 1;
      if (!skip) {
        if (n - begin >= 16) call(begin, e - begin, std::true_type{});
        else call(begin, e - begin, std::false_type{});
      }
      open = skip = false;
    }
    // Starts and ends now alternate, start first; a last start without an end stays open.
    if (inner) [[likely]] {
      while (ends) {  // every end closes the lowest start: one branch a word
        const std::size_t b = static_cast<std::size_t>(__builtin_ctzll(starts));
        call(pos + b, static_cast<std::size_t>(__builtin_ctzll(ends)) - b, std::true_type{});
        starts &= starts - 1;
        ends &= ends - 1;
      }
      if (starts) {
        begin = pos + static_cast<std::size_t>(__builtin_ctzll(starts));
        open = true;
      }
    } else {
      while (starts) {
        const std::size_t b = pos + static_cast<std::size_t>(__builtin_ctzll(starts));
        starts &= starts - 1;
        if (!ends) {
          begin = b;
          open = true;
          break;
        }
        call(b, pos + static_cast<std::size_t>(__builtin_ctzll(ends)) - b, std::false_type{});
        ends &= ends - 1;
      }
    }
    if (pos + 64 >= last && !open) return;  // nothing of ours can start beyond `last`
  }
  if (open && !skip) call(begin, n - begin, std::false_type{});
}

}  // namespace tandem::mapreduce::detail
