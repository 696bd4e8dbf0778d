// The GPU group-by engines' stats as readable report lines (--explain).
#include <fmt/format.h>

#include "tandem/groupby/gpu_hash_options.hpp"

namespace tandem {

void explain_stats(Report& r, const GpuEngineStats& s) {
  if (s.engine == "hash" && s.dense) {
    r.note(
        fmt::format("GPU dense-range group-by: keys over a range of {}, direct-indexed accumulators ({} slots a "
                    "block); partitions: {}; {} distinct keys, in key order",
                    s.key_range, s.shared_entries, s.partition_note, s.distinct));
    return;
  }
  if (s.engine == "hash") {
    if (!s.dense_note.empty()) r.note("dense-range path not taken: " + s.dense_note);
    r.note(
        fmt::format("GPU hash group-by: Bs={} blocks x N={} threads; p={:.3g}% sampled ({} records, {} distinct, "
                    "Chao1 estimate {}, Good-Turing upper bound {}); hot fraction {:.3g}; hot-key path {}",
                    s.blocks, s.block_threads, s.sample_fraction * 100, s.sampled_records, s.sampled_distinct,
                    s.distinct_estimate, s.distinct_upper, s.hot_fraction, s.hot_path ? "on" : "off"));
    r.note(fmt::format(
        "hot keys: H={} in a shared table of {} slots ({}{}) x {} accumulator cop{}, holding {:.1f}% of the sample",
        s.hot_keys, s.shared_entries,
        s.two_choice    ? "two-choice placement"
        : s.hot_buckets ? "two-choice buckets of 4"
                        : "linear probing",
        s.warp_match ? ", lanes grouped by key first" : "", s.sub_tables, s.sub_tables == 1 ? "y" : "ies",
        s.hot_share * 100));
    const double all = double(s.shared_hits + s.global_hits);
    r.note(
        fmt::format("pairs: {} shared-memory ({:.1f}%), {} global-memory; global table {} slots; {} overflowed the "
                    "probe limit; {} grow(s), {} retr{}; {} distinct keys",
                    s.shared_hits, all > 0 ? 100.0 * s.shared_hits / all : 0.0, s.global_hits, s.table_slots, s.spilled,
                    s.result_grows, s.retries, s.retries == 1 ? "y" : "ies", s.distinct));
    if (s.partitions)
      r.note(
          fmt::format("cold keys partitioned: {}; {} pairs through the partitions, {} of them sent to the global table",
                      s.partition_note, s.partitioned, s.partition_direct));
    else
      r.note(fmt::format("cold keys straight into the global table (partitioned tier: {})",
                         s.partition_note.empty() ? "not for this aggregate" : s.partition_note));
    return;
  }
  r.note(
      fmt::format("GPU engine: Bs={} blocks x N={} threads; p={:.3g}% sampled ({} records); hot fraction {:.3g}; "
                  "hot-key path {}; {} tables",
                  s.blocks, s.block_threads, s.sample_fraction * 100, s.sampled_records, s.hot_fraction,
                  s.hot_path ? "on" : "off", s.block_tables ? "per-block global" : "direct global (result)"));
  r.note(fmt::format("sampling: H={} hot keys holding {:.1f}% of the sampled pairs", s.hot_keys, s.hot_share * 100));
  r.note(fmt::format("sizes: sm_pool {} entries/block, gm_pool {} entries/block, spill list {} entries",
                     s.shared_entries, s.block_pool_entries, s.spill_entries));
  const double all = double(s.shared_hits + s.global_hits + s.spilled);
  r.note(
      fmt::format("pairs: {} shared-memory ({:.1f}%), {} global-memory, {} spilled; {} result grow(s), {} retr{}; "
                  "{} distinct keys",
                  s.shared_hits, all > 0 ? 100.0 * s.shared_hits / all : 0.0, s.global_hits, s.spilled, s.result_grows,
                  s.retries, s.retries == 1 ? "y" : "ies", s.distinct));
}

}  // namespace tandem
