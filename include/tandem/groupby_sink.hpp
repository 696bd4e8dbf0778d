// A group-by over a table that arrives in pieces (a CSV scan's chunks, say): the chunk interface
// of tandem::groupby. Each chunk is folded into partial groups as it arrives (count, sum, min,
// max, mean, var, std, first and last combine; median, quantile, nunique and top keep their rows'
// key and value columns): into a hash table per consuming thread kept across chunks where the
// keys and aggregations allow, else the chunk's own. finish() combines them.
//
//   tandem::GroupBySink sink(spec);
//   #pragma omp parallel for
//   for (std::size_t i = 0; i < chunks.size(); ++i) sink.consume(i, chunks[i]);
//   auto r = sink.finish();  // the table tandem::groupby gives over the chunks joined in order
//
// Bounded memory: when the partial groups and kept rows pass memory_limit, they are split into
// key ranges (splitters sampled from the partial groups at hand) written to files in a private
// folder under temp_dir, and finish() combines one range at a time in key order, handing each
// range's groups on as soon as they are made (finish(pieces)), so that neither the partial groups
// nor the result need fit in memory (docs/groupby.md, "Chunks and bounded memory").
// The folder goes when the sink does, on every path: a thrown exception, or SIGINT/SIGTERM in a
// program that calls io::remove_temporaries() from its handler (the CLI does).
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "tandem/groupby.hpp"

namespace tandem {

struct GroupBySinkOptions {
  int threads{0};               // threads the sink may use in finish() (0: default_threads())
  std::size_t memory_limit{0};  // bytes for partial group states; 0: a quarter of the available memory
  std::string temp_dir;         // spill folder; empty: $TMPDIR, else /tmp
  // The rows the chunks will hold in all, where the caller can tell (a file's size over the width
  // of its first rows); 0: unknown. It keeps the hash tables across chunks for keys that look
  // distinct at first but repeat over the whole input (10^7 keys in 10^9 rows).
  std::size_t expected_rows{0};
};

// A group-by over a table that arrives in pieces. Every chunk holds at least the spec's key and
// input columns (by name; other columns are ignored), with the same types in every chunk.
// The first chunk's columns are checked as tandem::groupby checks its input (UsageError); a later
// chunk that lacks a column or holds another type gets a UsageError naming the chunk and column.
// With no chunk at all, finish() cannot know the columns' types: consume an empty chunk to get an
// empty result (UsageError otherwise).
class GroupBySink {
 public:
  GroupBySink(GroupBySpec spec, GroupBySinkOptions options = {});
  ~GroupBySink();  // removes any spill files
  GroupBySink(const GroupBySink&) = delete;
  GroupBySink& operator=(const GroupBySink&) = delete;
  // Thread-safe: several threads call it at once. chunk_index numbers the chunks in input order
  // (0, 1, 2, … each once, in any call order) so that first/last follow row order. Each call
  // aggregates its chunk on the calling thread. InputError where tandem::groupby's would be (a
  // 64-bit integer sum that does not fit), here for a partial sum (a chunk's or a thread's).
  void consume(std::size_t chunk_index, const Table& chunk);
  // The same table tandem::groupby gives over the chunks concatenated in chunk_index order
  // (rows sorted by key, same column names and types), with what ran in the report; float sums,
  // means, var and std up to rounding, which may change from run to run. Once.
  GroupByResult finish();
  // The same result handed to `pieces` a table at a time, in key order (each piece has the
  // result's columns and at least one row; their rows one after another are finish()'s table).
  // A spilled sink hands over one key range at a time, so the whole result is never in memory.
  // The returned table has the result's columns and no rows. Once (instead of finish()); an empty
  // `pieces` is finish().
  using ResultPieces = std::function<void(Table piece)>;
  GroupByResult finish(const ResultPieces& pieces);

  // Bytes of partial groups and kept rows held in memory now, and whether they were spilled.
  std::size_t memory_bytes() const;
  bool spilled() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem
