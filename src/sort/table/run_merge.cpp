#include "run_merge.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace tandem::detail {

RowComparator::RowComparator(const Table& like, const SortSpec& spec, const TableSortOptions& options)
    : layout_(plan_key_layout(like, spec, options)) {}

int RowComparator::compare(const Table& a, std::size_t i, const Table& b, std::size_t j) const {
  for (const KeyField& f : layout_.fields)
    if (const int c = compare_field(a, i, b, j, f, layout_.nulls); c != 0) return c;
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

// One run being merged: its current block and row.
struct Cursor {
  std::size_t run{0}, block{0}, row{0};
  std::shared_ptr<const Table> table;
  std::int64_t in_batch{-1};  // the block's index among the batch's tables; -1: not in it yet
};

}  // namespace

std::size_t merge_runs(const RunFile& runs, const Table& like, const RowComparator& cmp,
                       std::optional<std::size_t> limit, std::size_t batch_rows,
                       const std::function<void(const Table&)>& emit) {
  std::vector<Cursor> cursors;
  for (std::size_t r = 0; r < runs.runs(); ++r)
    if (runs.blocks(r) > 0)
      cursors.push_back({r, 0, 0, std::make_shared<const Table>(runs.read_block(r, 0, like)), -1});
  // Heap of cursor indices, the smallest row on top; ties go to the earlier run (stable).
  auto before = [&](std::size_t x, std::size_t y) {
    const Cursor &a = cursors[x], &b = cursors[y];
    const int c = cmp.compare(*a.table, a.row, *b.table, b.row);
    return c != 0 ? c < 0 : a.run < b.run;
  };
  std::vector<std::size_t> heap(cursors.size());
  for (std::size_t i = 0; i < heap.size(); ++i) heap[i] = i;
  auto heap_less = [&](std::size_t x, std::size_t y) { return before(y, x); };  // std heaps keep the largest on top
  std::make_heap(heap.begin(), heap.end(), heap_less);

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
  while (!heap.empty() && emitted + refs.size() < wanted) {
    std::pop_heap(heap.begin(), heap.end(), heap_less);
    const std::size_t top = heap.back();
    heap.pop_back();
    Cursor& c = cursors[top];
    if (c.in_batch < 0) {
      c.in_batch = static_cast<std::int64_t>(tables.size());
      held.push_back(c.table), tables.push_back(c.table.get());
    }
    refs.push_back({static_cast<std::uint32_t>(c.in_batch), c.row});
    bool more = ++c.row < c.table->rows();
    if (!more && ++c.block < runs.blocks(c.run)) {
      c.table = std::make_shared<const Table>(runs.read_block(c.run, c.block, like));
      c.row = 0, c.in_batch = -1;
      more = c.table->rows() > 0;
    }
    if (more) {
      heap.push_back(top);
      std::push_heap(heap.begin(), heap.end(), heap_less);
    }
    if (refs.size() == batch_rows) flush();
  }
  flush();
  return emitted;
}

}  // namespace tandem::detail
