// The order word counts print in: count descending, then the word's bytes (as unsigned char).
// Shared by sort_word_counts and the GPU word count, which sorts views of the words it downloaded
// and makes each string once, in place.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace tandem::mapreduce::detail {

// A word's first 8 bytes, zero-padded, as a big-endian number: numbers that differ order as the
// words do (a pad byte sorts first, as the end of a shorter word does); equal ones need the words.
inline std::uint64_t word_prefix(std::string_view w) {
  std::uint64_t p = 0;
  if (!w.empty()) std::memcpy(&p, w.data(), std::min<std::size_t>(w.size(), 8));
  return __builtin_bswap64(p);
}

// A word's place in print order as one number that never decreases along it: the count's
// complement in the top 16 bits, the word's first 6 bytes below (word_prefix's top 48 bits); 0 for
// every word of 65,535 or more occurrences. Words with different numbers need no other comparison,
// so a radix sort on it orders almost all of them; equal numbers (a shared 6-byte prefix and the
// same count, or the few most frequent words) are then ordered as words.
inline std::uint64_t word_order_key(std::uint64_t count, std::uint64_t prefix) {
  constexpr std::uint64_t kMost = 0xffff;
  return count >= kMost ? 0 : (kMost - count) << 48 | prefix >> 16;
}

// Indices of the entries (words[i], counts[i]) in print order, sorted on `threads` threads when
// there are many: their word_order_keys radix-sorted with the indices, then only runs of equal
// keys compared as words.
std::vector<std::size_t> word_count_order(std::span<const std::string_view> words,
                                          std::span<const std::uint64_t> counts, int threads);

}  // namespace tandem::mapreduce::detail
