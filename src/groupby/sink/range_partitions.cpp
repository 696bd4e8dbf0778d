#include "groupby/sink/range_partitions.hpp"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/scratch_pool.hpp"
#include "groupby/sink/combine_partials.hpp"
#include "groupby/sink/sink_config.hpp"
#include "table/table_wire.hpp"

namespace tandem::sink {
namespace {

constexpr std::size_t kFiles = SinkConfig::kFilesPerPartition;

// One file's blocks (in chunk order) as one table shaped like `like`.
Table read_spilled(SpillFiles& files, std::size_t f, const Table& like, int threads) {
  std::vector<Table> parts;
  for (const auto& block : files.read(f)) parts.push_back(read_tables(block.bytes, block.size, like, 1));
  return concat_tables(parts, like, threads);
}

// Splitters for range p of `files` from a sample of its rows, read a block at a time: each block
// gives sample rows in proportion to its bytes.
KeyRanges sample_range(SpillFiles& files, std::size_t p, const RangeFinish& how, std::size_t parts) {
  const std::size_t keys = how.plan.spec.by.size();
  const double total = static_cast<double>(files.bytes(p * kFiles) + files.bytes(p * kFiles + 1));
  std::vector<Table> picked;
  for (std::size_t which = 0; which < kFiles; ++which) {
    const Table& like = which == 0 ? how.partial_like : how.kept_like;
    files.for_each_block(p * kFiles + which, [&](const SpillFiles::Block& block) {
      const Table t = read_tables(block.bytes, block.size, like, 1);
      const auto want = static_cast<std::size_t>(
          std::ceil(static_cast<double>(SinkConfig::kSampleRows) * static_cast<double>(block.size) / total));
      const std::size_t n = std::min(t.rows(), want);
      std::vector<std::size_t> rows(n);
      for (std::size_t k = 0; k < n; ++k) rows[k] = k * t.rows() / n;
      if (n > 0) picked.push_back(gather_keys(t, keys, rows));
    });
  }
  std::vector<const Table*> tables;
  for (const Table& t : picked) tables.push_back(&t);
  return KeyRanges::sample(tables, keys, parts, SinkConfig::kSampleRows * 2);
}

void combine_range(SpillFiles& files, std::size_t p, RangeFinish& how) {
  const std::size_t f = p * kFiles;
  const Table partials = read_spilled(files, f, how.partial_like, how.threads);
  files.remove(f);
  const Table kept = how.plan.kept.aggs.empty() ? Table{} : read_spilled(files, f + 1, how.kept_like, how.threads);
  files.remove(f + 1);
  if ((how.plan.kept_only ? kept : partials).rows() == 0) return;
  ++how.ranges_combined;
  Combined c = combine_partials(partials, kept, how.plan, how.threads, how.mostly_distinct);
  how.by_partition |= c.by_partition;
  how.emit(std::move(c.table));
}

}  // namespace

void give_back_memory(std::size_t keep) {
  // The scratch pool keeps freed engine arrays for the next call (up to a quarter of the machine's
  // memory), and malloc keeps freed heap pages: under a memory limit both go back.
  if (cached_scratch_bytes() > keep) release_cached_scratch();
  ::malloc_trim(0);
}

namespace {}  // namespace

void append_by_range(SpillFiles& files, const Table& t, const KeyRanges& ranges, std::uint64_t chunk,
                     std::size_t which) {
  if (t.rows() == 0) return;
  const std::vector<std::uint32_t> range = ranges.assign(t);
  std::vector<std::size_t> starts(ranges.parts() + 1, 0), order(t.rows());
  for (const std::uint32_t r : range) ++starts[r + 1];
  std::partial_sum(starts.begin(), starts.end(), starts.begin());
  std::vector<std::size_t> next(starts.begin(), starts.end() - 1);
  for (std::size_t i = 0; i < range.size(); ++i) order[next[range[i]]++] = i;  // rows keep their order
  const TableImages images = write_table_images(t, order, starts, 1);
  std::size_t at = 0;
  for (std::size_t p = 0; p < ranges.parts(); ++p) {
    if (images.sizes[p] > 0) files.append(p * kFiles + which, chunk, images.bytes.data() + at, images.sizes[p]);
    at += images.sizes[p];
  }
}

void finish_ranges(SpillFiles& files, std::size_t parts, RangeFinish& how, int depth) {
  for (std::size_t p = 0; p < parts; ++p) {
    const std::uint64_t bytes = files.bytes(p * kFiles) + files.bytes(p * kFiles + 1);
    if (bytes == 0) continue;
    if (bytes > how.budget && depth < SinkConfig::kMaxSplitDepth) {
      const std::size_t want = std::clamp<std::size_t>(2 * (bytes / how.budget + 1), 2, SinkConfig::kPartitions);
      const KeyRanges ranges = sample_range(files, p, how, want);
      if (ranges.parts() > 1) {
        // Rewritten block by block with the blocks' chunk tags, so that every sub-range's blocks
        // still read back in chunk order.
        SpillFiles sub(how.temp_parent, ranges.parts() * kFiles);
        for (std::size_t which = 0; which < kFiles; ++which) {
          const Table& like = which == 0 ? how.partial_like : how.kept_like;
          files.for_each_block(p * kFiles + which, [&](const SpillFiles::Block& block) {
            append_by_range(sub, read_tables(block.bytes, block.size, like, 1), ranges, block.chunk, which);
          });
          files.remove(p * kFiles + which);
        }
        ++how.ranges_split;
        how.rewritten += sub.bytes_written();
        finish_ranges(sub, ranges.parts(), how, depth + 1);
        continue;
      }
      ++how.single_key_over_budget;
    }
    how.largest = std::max(how.largest, bytes);
    combine_range(files, p, how);
    give_back_memory(how.budget);
  }
}

}  // namespace tandem::sink
