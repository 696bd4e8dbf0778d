// tandem::GroupBySink: each consume() folds its chunk into partial groups on the calling thread:
// into running groups kept across chunks (running_groups.hpp; one per consuming thread at a
// time) where the keys and aggregations allow, else into the chunk's own partial groups (the CPU
// engine over the chunk). Pieces (a chunk's partial groups, running groups handed over when they
// pass their share of the memory limit, the kept rows of holistic aggregations) are kept in
// memory, tagged with the chunk index; past the memory limit everything kept is split into
// SinkConfig::kPartitions key ranges (splitters sampled from what is kept then) and appended to
// spill files, as is every later piece. finish() joins the pieces in chunk order and combines
// them: all at once in memory, or range by range in key order (range_partitions.hpp), each
// range's groups handed on as they are made.
#include "tandem/groupby_sink.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <numeric>
#include <unordered_set>

#include <fmt/format.h>

#include "groupby/sink/chunk_partials.hpp"
#include "groupby/sink/combine_partials.hpp"
#include "groupby/sink/key_ranges.hpp"
#include "groupby/sink/partitioned_combine.hpp"
#include "groupby/sink/piece_arena.hpp"
#include "groupby/sink/range_partitions.hpp"
#include "groupby/sink/running_groups.hpp"
#include "groupby/sink/sink_config.hpp"
#include "groupby/sink/spill_files.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

namespace tandem {

using sink::SinkConfig;

std::size_t sink::SinkConfig::memory_limit(std::size_t given) {
  return memory_limit_or_share(given, kMemoryShareDivisor);
}

double sink::SinkConfig::estimated_keys(std::size_t rows, std::size_t groups) {
  if (groups >= rows) return std::numeric_limits<double>::infinity();
  const double n = static_cast<double>(rows), g = static_cast<double>(groups);
  double lo = g, hi = 1e18;  // D·(1 - e^(-n/D)) grows with D, from below g to n
  for (int i = 0; i < 200 && hi - lo > 1e-6 * lo; ++i) {
    const double d = std::sqrt(lo * hi);
    (d * -std::expm1(-n / d) < g ? lo : hi) = d;
  }
  return std::sqrt(lo * hi);
}

bool sink::SinkConfig::running_groups_pay(std::size_t rows, std::size_t groups, std::size_t expected_rows) {
  if (rows < kRunningProbeRows || static_cast<double>(groups) <= kRunningGroupsShare * static_cast<double>(rows))
    return true;
  return expected_rows > 0 && static_cast<double>(expected_rows) >= kRunningRowsPerKey * estimated_keys(rows, groups);
}

bool sink::SinkConfig::surely_distinct(std::size_t rows, std::size_t groups, std::size_t expected_rows) {
  if (rows < kEarlyProbeRows || groups > rows) return false;
  const double n = static_cast<double>(rows);
  const double low_keys = n * n / (2 * (static_cast<double>(rows - groups) + 3));
  return low_keys >= kEarlyDistinctKeys && low_keys >= kRunningRowsPerKey * static_cast<double>(expected_rows);
}

struct GroupBySink::Impl {
  sink::SinkPlan plan;
  GroupBySinkOptions options;
  std::size_t limit;
  int threads;

  // Set by the first chunk: its columns' types and the empty tables of each kind.
  std::mutex schema_lock;
  std::atomic<bool> has_schema{false};
  Table schema;        // the columns read, no rows
  Table empty_result;  // tandem::groupby over no rows
  Table partial_like;  // a chunk's partial groups, no rows
  Table kept_like;     // a chunk's kept rows, no rows
  Table schema_input;  // engine_input of the schema: the running groups' column types

  // Running groups, when the plan allows them: those no consume() holds now, and the bytes they
  // hold. One passing flush_bytes (its share of a quarter of the limit) becomes a piece and
  // starts again.
  std::atomic<bool> running{false};
  std::atomic<bool> gave_up_running{false};  // then later chunks' rows are partial groups of their own
  std::atomic<bool> keys_repeat{false};      // a table passed the probe keeping them: no early probes
  std::atomic<bool> gave_up_early{false};    // by an early probe (for the report)
  std::size_t flush_bytes{0};
  struct Idle {
    std::unique_ptr<sink::RunningGroups> groups;
    std::size_t bytes{0};
  };
  std::vector<Idle> idle;  // under `lock`
  std::size_t running_bytes{0};

  struct Piece {
    std::size_t chunk;
    Table partial, kept;
  };
  mutable std::mutex lock;
  std::unordered_set<std::size_t> seen;
  std::vector<Piece> pieces;
  // Every thread's running groups, when finish merges them partition by partition.
  std::vector<std::unique_ptr<sink::RunningGroups>> merged;
  std::size_t bytes{0};
  std::unique_ptr<sink::SpillFiles> spill;
  sink::PieceArena arena;  // the pieces' owned copies of chunk columns
  sink::KeyRanges ranges;  // made at the first spill
  bool finished{false};
  // For the report.
  std::size_t chunks{0}, rows{0}, partial_rows{0}, kept_rows{0}, running_tables{0};
  bool combined_by_partition{false};
  bool combined_into_largest{false};
  bool combined_from_running{false};
  std::string combine_steps;  // where the in-memory combine's time went, for the report
  double consume_seconds{0};

  Impl(GroupBySpec spec, GroupBySinkOptions o)
      : plan(sink::plan_sink(spec)),
        options(std::move(o)),
        limit(SinkConfig::memory_limit(options.memory_limit)),
        threads(options.threads > 0 ? options.threads : default_threads()) {
    if (options.threads < 0)
      throw UsageError(
          fmt::format("group-by sink threads: {} (expected 0 for every core, or a positive count)", options.threads));
  }

  void set_schema(const Table& chunk);
  void check_schema(std::size_t index, const Table& chunk) const;
  void store(Piece piece);
  Idle acquire();
  void release(Idle held);
  Piece fold_running(std::size_t index, const Table& chunk);
  void take_running();
  void spill_piece(const Piece& piece);
  void start_spill();
  // The result, handed on in pieces where `in_pieces` and the engine combines.
  void finish_in_memory(const ResultPieces& hand_on, bool in_pieces);
  void finish_spilled(Report& report, const ResultPieces& emit);
  // `in_pieces`: the caller takes the result a piece at a time (else pieces come only from a
  // spilled sink, and finish() joins them).
  GroupByResult finish(const ResultPieces& emit, bool in_pieces);
};

// The first chunk's columns are checked as tandem::groupby checks its input, on no rows.
void GroupBySink::Impl::set_schema(const Table& chunk) {
  std::vector<Column> cols;
  for (const auto& name : plan.read) {
    const Column* c = chunk.find(name);
    cols.push_back(c != nullptr ? *c : chunk.column(name));  // UsageError naming a missing column
  }
  schema = empty_like(Table(std::move(cols)));
  GroupByOptions cpu;
  cpu.device = Device::cpu;
  cpu.threads = 1;
  empty_result = tandem::groupby(schema, plan.spec, cpu).table;
  partial_like = sink::partial_groups(schema, plan);
  kept_like = plan.kept.aggs.empty() ? Table{} : sink::kept_rows(schema, plan);
  schema_input = sink::engine_input(schema, plan);
  running = !plan.kept_only && sink::keeps_running_groups(plan, schema_input);
  // A table handed over is copied into its piece before it is freed, on every consuming thread
  // at about the same time: the tables and those copies stay within half the limit. (A half for
  // the tables alone: q3 of 10^8 rows at K = 10 under 2 GiB on 2 threads peaked at 2.86 GB,
  // against 2.42 GB now.)
  flush_bytes = limit / (4 * static_cast<std::size_t>(threads));
  has_schema = true;
}

void GroupBySink::Impl::check_schema(std::size_t index, const Table& chunk) const {
  for (const Column& want : schema.columns()) {
    const Column* c = chunk.find(want.name);
    if (c == nullptr) throw UsageError(fmt::format("group-by sink: chunk {} has no column '{}'", index, want.name));
    if (c->type != want.type)
      throw UsageError(fmt::format("group-by sink: column '{}' is {} in chunk {}, {} in the first chunk", want.name,
                                   to_string(c->type), index, to_string(want.type)));
  }
}

void GroupBySink::Impl::spill_piece(const Piece& piece) {
  sink::append_by_range(*spill, piece.partial, ranges, piece.chunk, 0);
  sink::append_by_range(*spill, piece.kept, ranges, piece.chunk, 1);
}

// Key ranges from a sample of the partial groups and kept rows at hand (the lock is held), and
// everything kept is spilled by them.
void GroupBySink::Impl::start_spill() {
  std::vector<const Table*> at_hand;
  for (const Piece& p : pieces) {
    if (p.partial.rows() > 0) at_hand.push_back(&p.partial);
    if (p.kept.rows() > 0) at_hand.push_back(&p.kept);
  }
  ranges = sink::KeyRanges::sample(at_hand, plan.spec.by.size(), SinkConfig::kPartitions, SinkConfig::kSampleRows);
  spill = std::make_unique<sink::SpillFiles>(sink::temporary_directory(options.temp_dir),
                                             ranges.parts() * SinkConfig::kFilesPerPartition);
  for (const Piece& p : pieces) spill_piece(p);
  pieces.clear();
  bytes = 0;
  sink::give_back_memory(limit / SinkConfig::kFinishShare);
}

void GroupBySink::Impl::store(Piece piece) {
  std::unique_lock hold(lock);
  partial_rows += piece.partial.rows();
  kept_rows += piece.kept.rows();
  if (!spill) {
    bytes += sink::table_bytes(piece.partial) + sink::table_bytes(piece.kept);
    pieces.push_back(std::move(piece));
    if (bytes + running_bytes > limit) start_spill();
    return;
  }
  hold.unlock();  // the spill files lock each file; other chunks' pieces go on meanwhile
  spill_piece(piece);
  sink::give_back_memory(limit / SinkConfig::kFinishShare);
}

GroupBySink::Impl::Idle GroupBySink::Impl::acquire() {
  {
    const std::lock_guard hold(lock);
    if (!idle.empty()) {
      Idle held = std::move(idle.back());
      idle.pop_back();
      return held;
    }
    ++running_tables;
  }
  return {std::make_unique<sink::RunningGroups>(plan, schema_input), 0};
}

void GroupBySink::Impl::release(Idle held) {
  const std::size_t now = held.groups->bytes();
  const std::lock_guard hold(lock);
  running_bytes = running_bytes + now - held.bytes;
  held.bytes = now;
  idle.push_back(std::move(held));
}

// Folds the chunk into running groups; their partial groups when they passed flush_bytes.
GroupBySink::Impl::Piece GroupBySink::Impl::fold_running(std::size_t index, const Table& chunk) {
  Piece piece{index, {}, {}};
  Idle held = acquire();
  try {
    sink::RunningGroups& g = *held.groups;
    const Table input = sink::engine_input(chunk, plan);
    // Each consuming thread's table sees about its share of the rows.
    const std::size_t table_rows = options.expected_rows / static_cast<std::size_t>(threads);
    std::size_t folded = 0;
    bool given_up = false;
    if (g.rows() == 0 && !keys_repeat.load() && input.rows() >= 2 * SinkConfig::kEarlyProbeRows) {
      folded = SinkConfig::kEarlyProbeRows;
      g.add(input, 0, folded);
      given_up = SinkConfig::surely_distinct(g.rows(), g.groups(), table_rows);
    }
    if (given_up) {
      g.clear();  // the probe's rows go on with the rest of the chunk, each its own group
      if (running.exchange(false)) gave_up_running = gave_up_early = true;
      piece.partial = sink::row_partials(chunk, plan, partial_like, &arena);
    } else {
      g.add(input, folded, input.rows());
      const bool distinct = !SinkConfig::running_groups_pay(g.rows(), g.groups(), table_rows);
      if (!distinct && g.rows() >= SinkConfig::kRunningProbeRows) keys_repeat = true;
      if (distinct && running.exchange(false)) gave_up_running = true;
      if (distinct || g.bytes() > flush_bytes) piece.partial = g.take();
    }
  } catch (...) {
    release(std::move(held));
    throw;
  }
  release(std::move(held));
  return piece;
}

// Every running groups' partial groups, as pieces (after every chunk: the lock is held). Each
// thread's groups are taken on a thread of their own: 16 consuming threads' tables held 7·10^6
// groups of q3 at K = 10, a second on one thread. Where they are all there is to combine and the
// combine goes partition by partition, they are kept whole for finish to merge.
void GroupBySink::Impl::take_running() {
  std::size_t held = 0;
  for (const Idle& i : idle) held += i.groups->groups();
  if (!spill && pieces.empty() && plan.kept.aggs.empty() && !gave_up_running &&
      sink::combines_by_partition(plan, partial_like, held, true)) {
    combined_from_running = true;
    for (Idle& i : idle) merged.push_back(std::move(i.groups));
    partial_rows += held;
  } else {
    std::vector<Table> taken(idle.size());
    parallel_for(idle.size(), threads, [&](std::size_t i) { taken[i] = idle[i].groups->take(); });
    for (Table& t : taken) {
      Piece piece{chunks, std::move(t), {}};
      partial_rows += piece.partial.rows();
      if (spill) spill_piece(piece);
      else pieces.push_back(std::move(piece));
    }
  }
  idle.clear();
  running_bytes = 0;
}

GroupBySink::GroupBySink(GroupBySpec spec, GroupBySinkOptions options)
    : impl_(std::make_unique<Impl>(std::move(spec), std::move(options))) {}

GroupBySink::~GroupBySink() = default;

std::size_t GroupBySink::memory_bytes() const {
  const std::lock_guard hold(impl_->lock);
  return impl_->bytes + impl_->running_bytes;
}

bool GroupBySink::spilled() const {
  const std::lock_guard hold(impl_->lock);
  return impl_->spill != nullptr;
}

void GroupBySink::consume(std::size_t chunk_index, const Table& chunk) {
  Impl& s = *impl_;
  if (!s.has_schema.load()) {
    const std::lock_guard hold(s.schema_lock);
    if (!s.has_schema.load()) s.set_schema(chunk);  // a throw leaves it to the next chunk
  }
  s.check_schema(chunk_index, chunk);
  {
    const std::lock_guard hold(s.lock);
    if (s.finished) throw UsageError("group-by sink: consume() after finish()");
    if (!s.seen.insert(chunk_index).second)
      throw UsageError(fmt::format("group-by sink: chunk {} consumed twice", chunk_index));
    ++s.chunks;
    s.rows += chunk.rows();
  }
  if (chunk.rows() == 0) return;
  Stopwatch w;
  Impl::Piece piece = s.plan.kept_only ? Impl::Piece{chunk_index, {}, {}}
                      : s.running      ? s.fold_running(chunk_index, chunk)
                      : s.gave_up_running
                          ? Impl::Piece{chunk_index, sink::row_partials(chunk, s.plan, s.partial_like, &s.arena), {}}
                          : Impl::Piece{chunk_index, sink::partial_groups(chunk, s.plan), {}};
  if (!s.plan.kept.aggs.empty()) piece.kept = sink::kept_rows(chunk, s.plan, &s.arena);
  const double seconds = w.seconds();
  if (piece.partial.num_columns() > 0 || piece.kept.num_columns() > 0) s.store(std::move(piece));
  const std::lock_guard hold(s.lock);
  s.consume_seconds += seconds;
}

void GroupBySink::Impl::finish_in_memory(const ResultPieces& hand_on, bool in_pieces) {
  if (!merged.empty()) {
    sink::Combined out = sink::combine_running(merged, plan, schema_input, threads);
    combined_by_partition = out.by_partition;
    combined_into_largest = out.into_largest;
    for (const Stage& st : out.engine) combine_steps += fmt::format("; {} {:.3f} s", st.name, st.seconds);
    hand_on(std::move(out.table));
    return;
  }
  std::stable_sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.chunk < b.chunk; });
  std::vector<Table> partials, kept;
  for (Piece& p : pieces) {
    if (p.partial.num_columns() > 0) partials.push_back(std::move(p.partial));
    if (p.kept.num_columns() > 0) kept.push_back(std::move(p.kept));
  }
  pieces.clear();
  Stopwatch joining;
  const Table all_partials = concat_tables(partials, partial_like, threads);
  partials.clear();
  const Table all_kept = plan.kept.aggs.empty() ? Table{} : concat_tables(kept, kept_like, threads);
  kept.clear();
  const double joined = joining.seconds();
  combine_steps = fmt::format("; partial groups joined in {:.3f} s", joined);
  std::vector<Stage> engine;
  if (in_pieces && sink::combine_partials_in_pieces(all_partials, plan, threads, gave_up_running.load(),
                                                    SinkConfig::kResultPieceGroups, hand_on, engine)) {
    for (const Stage& st : engine) combine_steps += fmt::format(", {} {:.3f} s", st.name, st.seconds);
    return;
  }
  sink::Combined out = sink::combine_partials(all_partials, all_kept, plan, threads, gave_up_running.load());
  combined_by_partition = out.by_partition;
  for (const Stage& st : out.engine) combine_steps += fmt::format(", {} {:.3f} s", st.name, st.seconds);
  hand_on(std::move(out.table));
}

// Ranges are combined one at a time in key order, each on every thread, and handed on.
void GroupBySink::Impl::finish_spilled(Report& report, const ResultPieces& emit) {
  sink::RangeFinish how{plan,
                        partial_like,
                        kept_like,
                        sink::temporary_directory(options.temp_dir),
                        std::max(limit / SinkConfig::kFinishShare, SinkConfig::kMinRangeBytes),
                        threads,
                        emit,
                        gave_up_running.load()};
  const std::uint64_t written = spill->bytes_written();
  sink::finish_ranges(*spill, ranges.parts(), how);
  combined_by_partition = how.by_partition;
  report.note(fmt::format(
      "spilled: {} key ranges (splitters sampled at the first spill), {} bytes written to {}; {} range(s) "
      "combined one at a time in key order, the largest from {} bytes{}{}",
      ranges.parts(), written, spill->folder(), how.ranges_combined, how.largest,
      how.ranges_split == 0 ? ""
                            : fmt::format("; {} range(s) over {} bytes split again ({} bytes rewritten)",
                                          how.ranges_split, how.budget, how.rewritten),
      how.single_key_over_budget == 0 ? ""
                                      : fmt::format("; {} range(s) of a single key over {} bytes combined whole",
                                                    how.single_key_over_budget, how.budget)));
}

GroupByResult GroupBySink::finish() {
  std::vector<Table> pieces;
  GroupByResult r = impl_->finish([&](Table piece) { pieces.push_back(std::move(piece)); }, false);
  r.table = pieces.size() == 1 ? std::move(pieces.front()) : concat_tables(pieces, r.table, impl_->threads);
  return r;
}

GroupByResult GroupBySink::finish(const ResultPieces& pieces) {
  return pieces ? impl_->finish(pieces, true) : finish();
}

GroupByResult GroupBySink::Impl::finish(const ResultPieces& emit, bool in_pieces) {
  const std::lock_guard hold(lock);
  if (finished) throw UsageError("group-by sink: finish() called twice");
  if (!has_schema.load())
    throw UsageError("group-by sink: finish() before any chunk (consume an empty chunk to give the columns' types)");
  finished = true;
  take_running();
  GroupByResult out;
  Report& report = out.report;
  report.operation = "groupby";
  report.add("partial groups", "cpu", consume_seconds,
             fmt::format(
                 "{} chunks, {} rows → {} partial groups{} ({}; seconds summed over the consuming threads)", chunks,
                 rows, partial_rows,
                 plan.kept.aggs.empty() ? "" : fmt::format(", {} rows kept for holistic aggregations", kept_rows),
                 plan.kept_only        ? "none: every aggregation is holistic"
                 : running_tables == 0 ? "the CPU engine over each chunk"
                 : gave_up_running
                     ? fmt::format(
                           "running groups in {} hash table(s) until the keys proved mostly distinct{}, "
                           "then each row its own partial group",
                           running_tables,
                           gave_up_early ? fmt::format(" in a chunk's first {} rows", SinkConfig::kEarlyProbeRows) : "")
                     : fmt::format("running groups: {} hash table(s) kept across chunks", running_tables)));
  report.note(fmt::format("group-by sink: memory limit {} bytes{}", limit,
                          options.memory_limit > 0 ? "" : " (a quarter of the available memory)"));
  Stopwatch w;
  std::size_t groups = 0;
  const auto hand_on = [&](Table t) {
    groups += t.rows();
    if (t.rows() > 0) emit(std::move(t));
  };
  if (spill) finish_spilled(report, hand_on);
  else if (rows > 0) finish_in_memory(hand_on, in_pieces);
  out.table = empty_result;
  report.add("combine", "cpu", w.seconds(),
             fmt::format("{} groups from the partial groups {}, {} thread(s){}", groups,
                         combined_into_largest
                             ? "merged into the largest consuming thread's running groups, then put in key order"
                         : !combined_by_partition ? "by the CPU engine"
                         : combined_from_running
                             ? "merged partition by partition by key hash straight from the running groups, then "
                               "put in key order"
                             : "folded partition by partition by key hash, then put in key order",
                         threads, spill ? ", one key range at a time" : combine_steps));
  spill.reset();  // the spill files go as soon as they are read
  return out;
}

}  // namespace tandem
