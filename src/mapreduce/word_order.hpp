// The order word counts print in: count descending, then the word's bytes (as unsigned char).
// Shared by sort_word_counts and the GPU word count, which sorts views of the words it downloaded
// and makes each string once, in place.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tandem::mapreduce::detail {

// Indices of the entries (words[i], counts[i]) in print order, sorted on `threads` threads when
// there are many: small records (count, first 8 bytes as a number, index) are sorted, the words
// compared only where both tie.
std::vector<std::size_t> word_count_order(std::span<const std::string_view> words,
                                          std::span<const std::uint64_t> counts, int threads);

}  // namespace tandem::mapreduce::detail
