// Word count of a text or of files (CPU or GPU by device dispatch), and the CLI's order of its result.
// Device dispatch (Options::device): auto runs on the GPU when one is present and the input is large enough.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/mapreduce/engine_options.hpp"

namespace tandem::mapreduce {

struct WordCountOptions {
  bool lowercase{false};
  Options engine;
};

struct WordCount {
  std::vector<std::pair<std::string, std::uint64_t>> words;  // sorted: count desc, then word bytewise
  std::uint64_t total_words{0};
  EngineStats gpu;
  Report report;
};

// Counts the words of `text`. With lowercase, ASCII letters are folded first.
WordCount wordcount(std::string_view text, const WordCountOptions& opts = {});

// Counts the words of the files at `paths` ("-": standard input), read as one text with a newline
// after each file but the last, so that no word spans two. On the GPU, regular files are read in
// pieces straight into pinned buffers whose upload overlaps the next piece's read: the host never
// holds the whole text. InputError names a file that cannot be read.
WordCount wordcount_files(const std::vector<std::string>& paths, const WordCountOptions& opts = {});

// Sorts (word, count) pairs as the CLI prints them: count descending, then word bytewise. On
// `threads` threads (0: default_threads()) when there are many.
void sort_word_counts(std::vector<std::pair<std::string, std::uint64_t>>& v, int threads = 1);

}  // namespace tandem::mapreduce
