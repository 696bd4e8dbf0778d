#include "mapreduce/word_order.hpp"

#include <algorithm>
#include <cstring>
#include <parallel/algorithm>

namespace tandem::mapreduce::detail {

std::vector<std::size_t> word_count_order(std::span<const std::string_view> words,
                                          std::span<const std::uint64_t> counts, int threads) {
  struct Rec {
    std::uint64_t count, prefix;
    std::size_t at;
  };
  std::vector<Rec> recs(words.size());
  for (std::size_t i = 0; i < words.size(); ++i) recs[i] = {counts[i], word_prefix(words[i]), i};
  const auto before = [&words](const Rec& a, const Rec& b) {
    if (a.count != b.count) return a.count > b.count;
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    // string_view compares with char_traits<char>, which compares as unsigned char
    return words[a.at] < words[b.at];
  };
  if (threads > 1 && recs.size() >= 16384)
    __gnu_parallel::sort(recs.begin(), recs.end(), before, __gnu_parallel::default_parallel_tag(threads));
  else std::sort(recs.begin(), recs.end(), before);
  std::vector<std::size_t> order(recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i) order[i] = recs[i].at;
  return order;
}

}  // namespace tandem::mapreduce::detail
