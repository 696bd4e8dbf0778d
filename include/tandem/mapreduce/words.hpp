// Word tokenisation, the same on the CPU and the GPU: maximal runs of ASCII letters, digits, '\'',
// '_' and bytes >= 0x80.
#pragma once
#include <cstddef>

#include "tandem/cuda/hd.hpp"

namespace tandem::mapreduce {

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

}  // namespace tandem::mapreduce
