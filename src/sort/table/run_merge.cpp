#include "run_merge.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace tandem::detail {

KeyWords RowComparator::encode(const Table& block) const {
  KeyWords k;
  k.rows = block.rows();
  k.words = layout_.words;
  k.data.resize(k.rows * k.words);
  encode_keys(block, layout_, 0, k.rows, k);
  return k;
}

int RowComparator::compare_values(const Table& a, std::size_t i, const Table& b, std::size_t j) const {
  for (std::size_t f = static_cast<std::size_t>(layout_.first_tie_break); f < layout_.fields.size(); ++f)
    if (const int c = compare_field(a, i, b, j, layout_.fields[f], layout_.nulls); c != 0) return c;
  return 0;
}

namespace {

template <class T>
Column gather_numbers(const Column& like, std::span<const Table* const> tables, std::span<const RowRef> refs,
                      std::size_t index) {
  std::vector<T> values(refs.size());
  bool any_missing = false;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const Column& c = tables[refs[i].table]->column(index);
    values[i] = c.values.as<T>()[refs[i].row];
    any_missing = any_missing || !c.present(refs[i].row);
  }
  std::vector<std::uint8_t> validity;
  if (any_missing)
    validity = make_validity(refs.size(),
                             [&](std::size_t i) { return tables[refs[i].table]->column(index).present(refs[i].row); });
  return make_column<T>(like.name, std::move(values), std::move(validity));
}

Column gather_strings(const Column& like, std::span<const Table* const> tables, std::span<const RowRef> refs,
                      std::size_t index) {
  std::vector<std::uint64_t> offsets(refs.size() + 1, 0);
  bool any_missing = false;
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const Column& c = tables[refs[i].table]->column(index);
    offsets[i + 1] = offsets[i] + c.string(refs[i].row).size();
    any_missing = any_missing || !c.present(refs[i].row);
  }
  std::vector<char> bytes(offsets.back());
  for (std::size_t i = 0; i < refs.size(); ++i) {
    const auto s = tables[refs[i].table]->column(index).string(refs[i].row);
    if (!s.empty()) std::memcpy(bytes.data() + offsets[i], s.data(), s.size());
  }
  std::vector<std::uint8_t> validity;
  if (any_missing)
    validity = make_validity(refs.size(),
                             [&](std::size_t i) { return tables[refs[i].table]->column(index).present(refs[i].row); });
  return make_string_column(like.name, std::move(bytes), std::move(offsets), std::move(validity));
}

}  // namespace

Table gather_from_tables(std::span<const Table* const> tables, std::span<const RowRef> refs, const Table& like) {
  std::vector<Column> columns;
  for (std::size_t c = 0; c < like.num_columns(); ++c) {
    const Column& l = like.column(c);
    if (l.type == ColumnType::str) columns.push_back(gather_strings(l, tables, refs, c));
    else
      columns.push_back(visit_numeric(l.type, [&](auto t) { return gather_numbers<decltype(t)>(l, tables, refs, c); }));
  }
  return Table(std::move(columns));
}

namespace {

// One run being merged: its current block, the block's keys, and the row.
struct Cursor {
  std::size_t run{0}, block{0}, row{0};
  std::shared_ptr<const Table> table;
  KeyWords keys;
  bool done{false};
  std::int64_t in_batch{-1};  // the block's index among the batch's tables; -1: not in it yet
};

// A tournament tree over the cursors: node[0] the cursor whose row comes first, node[1..k) the
// losers of the games on the way up (leaf i sits at k + i). A new row of the winner replays one
// path: log2(k) compares per row. Ties go to the earlier run (stable); finished cursors lose.
class LoserTree {
 public:
  LoserTree(std::vector<Cursor>& cursors, const RowComparator& cmp)
      : cursors_(cursors), cmp_(cmp), node_(std::max<std::size_t>(cursors.size(), 1), kEmpty) {
    for (std::size_t i = 0; i < cursors.size(); ++i) climb(i, true);
  }
  // The cursor of the first row; finished when every cursor is.
  Cursor& top() { return cursors_[node_[0]]; }
  void replay() { climb(node_[0], false); }

 private:
  static constexpr std::size_t kEmpty = ~std::size_t{0};
  bool before(std::size_t x, std::size_t y) const {
    const Cursor &a = cursors_[x], &b = cursors_[y];
    if (a.done || b.done) return !a.done;
    const int c = cmp_.compare(*a.table, a.keys, a.row, *b.table, b.keys, b.row);
    return c != 0 ? c < 0 : x < y;
  }
  // Plays leaf i's row up the tree; while building, a node seen first keeps it until its other
  // side arrives.
  void climb(std::size_t i, bool building) {
    std::size_t winner = i;
    for (std::size_t n = (i + cursors_.size()) / 2; n > 0; n /= 2) {
      if (building && node_[n] == kEmpty) {
        node_[n] = winner;
        return;
      }
      if (before(node_[n], winner)) std::swap(node_[n], winner);
    }
    node_[0] = winner;
  }
  std::vector<Cursor>& cursors_;
  const RowComparator& cmp_;
  std::vector<std::size_t> node_;
};

}  // namespace

std::size_t merge_runs(const RunFile& runs, const Table& like, const RowComparator& cmp,
                       std::optional<std::size_t> limit, std::size_t batch_rows,
                       const std::function<void(Table&&)>& emit) {
  std::vector<Cursor> cursors;
  auto load = [&](Cursor& c) {  // the run's first block with rows from c.block on, or done
    for (; c.block < runs.blocks(c.run); ++c.block) {
      c.table = std::make_shared<const Table>(runs.read_block(c.run, c.block, like));
      c.row = 0, c.in_batch = -1;
      if (c.table->rows() == 0) continue;
      c.keys = cmp.encode(*c.table);
      return;
    }
    c.done = true, c.table.reset(), c.keys = {};
  };
  for (std::size_t r = 0; r < runs.runs(); ++r)
    if (runs.blocks(r) > 0) {
      cursors.emplace_back().run = r;
      load(cursors.back());
    }
  if (cursors.empty()) return 0;
  LoserTree tree(cursors, cmp);

  const std::size_t wanted = limit ? *limit : ~std::size_t{0};
  std::size_t emitted = 0;
  std::vector<std::shared_ptr<const Table>> held;  // the blocks the batch refers to
  std::vector<const Table*> tables;
  std::vector<RowRef> refs;
  auto flush = [&] {
    if (refs.empty()) return;
    emit(gather_from_tables(tables, refs, like));
    emitted += refs.size();
    refs.clear(), held.clear(), tables.clear();
    for (auto& c : cursors) c.in_batch = -1;
  };
  while (!tree.top().done && emitted + refs.size() < wanted) {
    Cursor& c = tree.top();
    if (c.in_batch < 0) {
      c.in_batch = static_cast<std::int64_t>(tables.size());
      held.push_back(c.table), tables.push_back(c.table.get());
    }
    refs.push_back({static_cast<std::uint32_t>(c.in_batch), c.row});
    if (++c.row == c.table->rows()) ++c.block, load(c);
    tree.replay();
    if (refs.size() == batch_rows) flush();
  }
  flush();
  return emitted;
}

}  // namespace tandem::detail
