// Word count on CPU threads (mapreduce::wordcount's CPU engine): each thread counts the chunks it
// takes into its own table of positions in the text, the tables are merged hash range by hash
// range in parallel, and strings are made only for the distinct words, in output order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tandem::mapreduce::detail {

// The counting loop's instructions: baseline x86-64 (SSE2; or no SIMD on other CPUs), or built
// for AVX2 and BMI2 with the AVX2 classifier (word_mask64_avx2).
enum class WordScanIsa { baseline, avx2 };

// AVX2 where the CPU has it, else baseline.
WordScanIsa best_word_scan_isa();

// How a stage's threads spent it, from the stage's start: when the last one began (waking a thread
// team), the longest thread's work and the mean of them (the rest of the stage is waiting).
struct StageThreads {
  double last_start{0};
  double longest{0};
  double mean{0};
};

struct CpuWordCountStats {
  int threads{1};
  WordScanIsa isa{WordScanIsa::baseline};
  std::size_t chunk_bytes{0};
  std::size_t chunks{0};
  std::uint64_t words{0};
  std::size_t partitions{0};        // hash ranges merged in parallel (0: one table, nothing to merge)
  std::size_t table_slots{0};       // the largest thread's tables (inline and long words), in slots
  std::size_t table_bytes{0};       // and in bytes
  std::size_t table_grows{0};       // over all thread tables
  std::size_t merge_grows{0};       // over all hash ranges' merged tables
  double count_seconds{0};          // tokenise and count
  double merge_seconds{0};          // merge the thread tables, sort each hash range
  double output_seconds{0};         // cut the sorted ranges into buckets, merge each, make the strings
  double output_serial_seconds{0};  // of which on one thread: splitters and the result's records
  StageThreads count_threads, merge_threads, output_threads;
};

// The chunk size when none is given: about 32 chunks per thread, 32 KiB to 1 MiB.
std::size_t word_chunk_bytes(std::size_t bytes, int threads);

// Words of `text` with their counts, sorted as sort_word_counts sorts them. threads >= 1;
// chunk_bytes 0: word_chunk_bytes; isa: one this CPU runs (avx2 only where best_word_scan_isa
// says so).
std::vector<std::pair<std::string, std::uint64_t>> cpu_wordcount(std::string_view text, int threads,
                                                                 std::size_t chunk_bytes, CpuWordCountStats& stats,
                                                                 WordScanIsa isa = best_word_scan_isa());

}  // namespace tandem::mapreduce::detail
