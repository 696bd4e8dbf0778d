// What the group-by sink makes of one chunk: its partial groups (the CPU engine over the
// chunk with the combine plan's partial aggregations, plus a row count) and, for holistic
// aggregations, an owned copy of the key and value columns of its rows.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "groupby/combine_plan.hpp"
#include "tandem/groupby.hpp"

namespace tandem::sink {

class PieceArena;

inline constexpr const char* kRowsColumn = "__rows";

struct SinkPlan {
  GroupBySpec spec;
  CombinePlan combine;
  GroupBySpec partial;                 // keys; the combine plan's partial aggregations, then count() as kRowsColumn
  GroupBySpec final;                   // keys; its final aggregations, then sum(kRowsColumn)
  GroupBySpec kept;                    // keys; the holistic aggregations (none: no rows are kept)
  std::vector<std::string> read;       // the chunk's columns the sink reads: keys, then inputs
  std::vector<std::string> kept_read;  // the columns kept rows hold: keys, then holistic inputs
  // Every aggregation is holistic: the kept rows make the whole result (`kept` over them), and
  // no partial groups are made.
  bool kept_only{false};
};
SinkPlan plan_sink(const GroupBySpec& spec);

// The chunk's columns the partial aggregations read, and their f64 copies (UsageError naming a
// missing column).
Table engine_input(const Table& chunk, const SinkPlan& plan);
// The chunk's partial groups, in key order.
Table partial_groups(const Table& chunk, const SinkPlan& plan);
// Each row of the chunk as a partial group of its own, made column by column without grouping:
// what partial_groups gives when no two rows share a key, for mostly distinct keys. `like`: the
// partial groups' columns (names, types), no rows.
Table row_partials(const Table& chunk, const SinkPlan& plan, const Table& like, PieceArena* arena = nullptr);
// An owned copy of the chunk's kept columns (the caller's buffers may not outlive the call).
// Both copy into the arena where one is given (piece_arena.hpp), else into buffers of their own.
Table kept_rows(const Table& chunk, const SinkPlan& plan, PieceArena* arena = nullptr);

// The bytes a table's buffers hold.
std::size_t table_bytes(const Table& t);

}  // namespace tandem::sink
