// The word tokenizers of the word count (mapreduce::for_each_word and the mask tokenizer of the
// word count's own CPU engine, detail::scan_words) and the engines that use them, against a reference that applies the
// documented rule directly: a word is a maximal run of ASCII letters, digits, '\'', '_' and bytes >= 0x80.
//
// Words must come out identical whatever the chunking (chunk edges may cut words anywhere), the
// CPU MapReduce engine's counts must equal the reference counts, and so must mapreduce::wordcount's
// (with and without ASCII lowercasing), sorted as documented.
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "mapreduce/cpu_wordcount.hpp"
#include "mapreduce/word_scan.hpp"
#include "tandem/mapreduce.hpp"

namespace {

using namespace tandem;
using Word = std::pair<std::size_t, std::size_t>;  // begin, length

bool word_byte(unsigned char c) {
  return std::isalnum(c) != 0 || c == '\'' || c == '_' || c >= 0x80;  // the "C" locale: ASCII only
}

std::vector<Word> reference_words(std::string_view text) {
  std::vector<Word> out;
  for (std::size_t i = 0; i < text.size();) {
    if (!word_byte(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const std::size_t b = i;
    while (i < text.size() && word_byte(static_cast<unsigned char>(text[i]))) ++i;
    out.emplace_back(b, i - b);
  }
  return out;
}

std::vector<Word> chunked_words(std::string_view text, std::size_t chunk, bool mask_tokenizer) {
  std::vector<Word> out;
  auto add = [&](std::size_t b, std::size_t len) { out.emplace_back(b, len); };
  for (std::size_t first = 0; first < text.size(); first += chunk) {
    const std::size_t last = std::min(text.size(), first + chunk);
    if (mask_tokenizer) mapreduce::detail::scan_words(text.data(), text.size(), first, last, add);
    else mapreduce::for_each_word(text.data(), text.size(), first, last, add);
  }
  return out;
}

// The word count's own CPU engine on small chunks (words across their edges) and 3 threads.
void check_word_engine(std::string_view text, std::size_t chunk,
                       const std::map<std::string_view, std::uint64_t>& want) {
  mapreduce::detail::CpuWordCountStats st;
  const auto words = mapreduce::detail::cpu_wordcount(text, 3, chunk, st);
  std::map<std::string_view, std::uint64_t> got;
  for (const auto& [w, c] : words) got[w] = c;
  fuzz::check(got.size() == words.size() && got == want,
              fmt::format("chunk {}: the word count engine's counts differ from the reference ({} vs {} distinct "
                          "words)",
                          chunk, got.size(), want.size()));
}

void check_engine(std::string_view text, std::size_t chunk, const std::map<std::string_view, std::uint64_t>& want) {
  const mapreduce::WordCountCpuJob job{text.data(), text.size(), chunk};
  mapreduce::Options o;
  o.threads = 2;
  const auto pairs = mapreduce::cpu_mapreduce(job, job.records(), o);
  const std::map<std::string_view, std::uint64_t> got(pairs.begin(), pairs.end());
  fuzz::check(got.size() == pairs.size(), fmt::format("chunk {}: the CPU engine returned a word twice", chunk));
  fuzz::check(got == want, fmt::format("chunk {}: the CPU engine's counts differ from the reference ({} vs {} "
                                       "distinct words)",
                                       chunk, got.size(), want.size()));
}

void check_wordcount(std::string_view text, bool lowercase) {
  std::string folded(text);
  if (lowercase)
    for (auto& c : folded) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::map<std::string, std::uint64_t> want;
  std::uint64_t total = 0;
  for (const auto& [b, len] : reference_words(folded)) ++want[folded.substr(b, len)], ++total;
  mapreduce::WordCountOptions o;
  o.lowercase = lowercase;
  o.engine.device = Device::cpu;
  o.engine.threads = 2;
  const mapreduce::WordCount wc = mapreduce::wordcount(text, o);
  const std::map<std::string, std::uint64_t> got(wc.words.begin(), wc.words.end());
  fuzz::check(got == want && got.size() == wc.words.size() && wc.total_words == total,
              fmt::format("wordcount (lowercase {}) differs from the reference: {} distinct, {} words; want {}, {}",
                          lowercase, wc.words.size(), wc.total_words, want.size(), total));
  for (std::size_t i = 1; i < wc.words.size(); ++i) {
    const auto &a = wc.words[i - 1], &b = wc.words[i];
    fuzz::check(a.second > b.second || (a.second == b.second && a.first < b.first),
                fmt::format("wordcount's words are not sorted by count, then bytes, at position {}", i));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<Word> want = reference_words(text);
  for (std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{64}, size + 1})
    for (bool mask : {false, true})
      fuzz::check(chunked_words(text, chunk, mask) == want,
                  fmt::format("chunks of {} bytes split the words differently ({})", chunk,
                              mask ? "mask tokenizer" : "for_each_word"));
  std::map<std::string_view, std::uint64_t> counts;
  for (const auto& [b, len] : want) ++counts[text.substr(b, len)];
  try {  // every text is valid input: not even a tandem::Error is an answer here
    for (std::size_t chunk : {std::size_t{3}, std::size_t{64}}) check_engine(text, chunk, counts);
    for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{64}, std::size_t{100}})
      check_word_engine(text, chunk, counts);
    check_wordcount(text, false);
    check_wordcount(text, true);
  } catch (const std::exception& e) {
    fuzz::fail(fuzz::type_name(e) + " from counting words: " + e.what());
  }
  return 0;
}
