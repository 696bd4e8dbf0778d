// The CPU word count's tokenizer: 64 bytes at a time classified into a bit mask (SSE2 where the
// target has it, a table otherwise), words found from the mask's 0/1 transitions. The same words
// and the same chunk rule as mapreduce::for_each_word.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
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

// Calls f(begin, length) for every word that starts inside [first, last) of text[0, n), as
// for_each_word does: a word crossing `last` is finished past it, one crossing `first` belongs to
// the previous chunk.
template <class F>
void scan_words(const char* text, std::size_t n, std::size_t first, std::size_t last, F&& f) {
  // open: inside a word begun before the block (at `begin`); a word running into `first` is
  // open too but not ours (skip).
  std::uint64_t carry = first > 0 && first < n && kWordByte[static_cast<unsigned char>(text[first - 1])];
  bool open = carry != 0, skip = open;
  std::size_t begin = 0;
  for (std::size_t pos = first; pos < n; pos += 64) {
    std::uint64_t m;
    if (n - pos >= 64) {
      m = word_mask64(text + pos);
    } else {  // the text's last bytes, padded with separators
      char tail[64] = {};
      std::memcpy(tail, text + pos, n - pos);
      m = word_mask64(tail);
    }
    const std::uint64_t before = (m << 1) | carry;  // bit i: byte i - 1 is a word byte
    carry = m >> 63;
    std::uint64_t starts = m & ~before, ends = ~m & before;  // an end is the byte after a word
    // Words of this chunk start before `last`.
    if (last <= pos) starts = 0;
    else if (last - pos < 64) starts &= (std::uint64_t{1} << (last - pos)) - 1;
    if (open) {
      if (!ends) {                             // the word goes on through the whole block
        if (skip && pos + 64 >= last) return;  // not ours, and none of ours starts before its end
        continue;
      }
      const std::size_t e = pos + static_cast<std::size_t>(__builtin_ctzll(ends));
      ends &= ends - 1;
      if (!skip) f(begin, e - begin);
      open = skip = false;
    }
    // Starts and ends now alternate, start first; a last start without an end stays open.
    while (starts) {
      const std::size_t b = pos + static_cast<std::size_t>(__builtin_ctzll(starts));
      starts &= starts - 1;
      if (!ends) {
        begin = b;
        open = true;
        break;
      }
      f(b, pos + static_cast<std::size_t>(__builtin_ctzll(ends)) - b);
      ends &= ends - 1;
    }
    if (pos + 64 >= last && !open) return;  // nothing of ours can start beyond `last`
  }
  if (open && !skip) f(begin, n - begin);
}

}  // namespace tandem::mapreduce::detail
