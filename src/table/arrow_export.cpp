// tandem::Table to the Arrow C Data / C Stream interfaces (include/tandem/table/arrow.hpp): every
// buffer is lent; the release callbacks hold the table (its buffers are shared) until the consumer
// lets go.
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/table/arrow.hpp"

namespace tandem {
namespace {

constexpr std::uint64_t kZeroOffset = 0;

// ---- what schemas and arrays share -------------------------------------------------------------
// Releases an ArrowSchema or ArrowArray made here: its children, then its private data.
template <class Arrow, class Data>
void release_made(Arrow* x) {
  auto* d = static_cast<Data*>(x->private_data);
  for (Arrow* child : d->children) {
    if (child->release) child->release(child);
    delete child;
  }
  delete d;
  x->release = nullptr;
}

// Gives `out` its private data `d` (released by release_made) and `children` empty children.
template <class Arrow, class Data>
void attach(Arrow* out, Data* d, std::size_t children) {
  out->private_data = d;
  out->release = &release_made<Arrow, Data>;
  d->children.reserve(children);
  for (std::size_t i = 0; i < children; ++i) d->children.push_back(new Arrow{});
  out->n_children = static_cast<std::int64_t>(children);
  out->children = d->children.data();
}

// ---- schemas -----------------------------------------------------------------------------------
struct SchemaData {
  std::string format;
  std::string name;
  std::vector<ArrowSchema*> children;
};

void fill_schema(ArrowSchema* out, std::string format, std::string name, std::int64_t flags, std::size_t children) {
  auto* d = new SchemaData{std::move(format), std::move(name), {}};
  *out = ArrowSchema{};
  out->format = d->format.c_str();
  out->name = d->name.c_str();
  out->flags = flags;
  attach(out, d, children);
}

// ---- arrays --------------------------------------------------------------------------------------
struct ArrayData {
  std::shared_ptr<const Table> table;
  std::vector<const void*> buffers;
  std::vector<ArrowArray*> children;
};

void fill_array(ArrowArray* out, const std::shared_ptr<const Table>& table, std::vector<const void*> buffers,
                std::size_t length, std::size_t nulls, std::size_t children) {
  auto* d = new ArrayData{table, std::move(buffers), {}};
  *out = ArrowArray{};
  out->length = static_cast<std::int64_t>(length);
  out->null_count = static_cast<std::int64_t>(nulls);
  out->n_buffers = static_cast<std::int64_t>(d->buffers.size());
  out->buffers = d->buffers.data();
  attach(out, d, children);
}

void export_column(const Column& c, const std::shared_ptr<const Table>& table, ArrowArray* out) {
  const std::size_t nulls = c.missing_count();
  const void* validity = nulls ? c.validity.data() : nullptr;
  if (c.type == ColumnType::str) {
    const void* offsets = c.offsets.empty() ? static_cast<const void*>(&kZeroOffset) : c.offsets.data();
    fill_array(out, table, {validity, offsets, c.values.data()}, c.length, nulls, 0);
  } else {
    fill_array(out, table, {validity, c.values.data()}, c.length, nulls, 0);
  }
}

// ---- streams -------------------------------------------------------------------------------------
struct StreamData {
  std::vector<Table> batches;
  std::size_t next{0};
  std::string error;
};

template <class F>
int guarded(ArrowArrayStream* s, F&& f) {
  auto* d = static_cast<StreamData*>(s->private_data);
  try {
    f(*d);
    return 0;
  } catch (const std::bad_alloc&) {
    d->error = "out of memory";
    return ENOMEM;
  } catch (const std::exception& e) {
    d->error = e.what();
    return EINVAL;
  }
}

int stream_schema(ArrowArrayStream* s, ArrowSchema* out) {
  return guarded(s, [&](StreamData& d) { export_arrow_schema(d.batches.front(), out); });
}

int stream_next(ArrowArrayStream* s, ArrowArray* out) {
  return guarded(s, [&](StreamData& d) {
    if (d.next == d.batches.size()) {
      *out = ArrowArray{};  // release == nullptr: the end of the stream
      return;
    }
    export_arrow(d.batches[d.next++], out, nullptr);
  });
}

const char* stream_error(ArrowArrayStream* s) {
  const auto* d = static_cast<StreamData*>(s->private_data);
  return d->error.empty() ? nullptr : d->error.c_str();
}

void release_stream(ArrowArrayStream* s) {
  delete static_cast<StreamData*>(s->private_data);
  s->release = nullptr;
}

}  // namespace

std::string_view arrow_format(ColumnType type) {
  switch (type) {
    case ColumnType::i32: return "i";
    case ColumnType::i64: return "l";
    case ColumnType::u32: return "I";
    case ColumnType::u64: return "L";
    case ColumnType::f32: return "f";
    case ColumnType::f64: return "g";
    case ColumnType::str: return "U";  // large_utf8: tandem's u64 offsets are Arrow's int64 ones
  }
  throw Error("unknown column type");
}

void export_arrow_schema(const Table& table, ArrowSchema* out) {
  fill_schema(out, "+s", "", 0, table.num_columns());
  for (std::size_t i = 0; i < table.num_columns(); ++i) {
    const Column& c = table.column(i);
    fill_schema(out->children[i], std::string(arrow_format(c.type)), c.name, ARROW_FLAG_NULLABLE, 0);
  }
}

void export_arrow(const Table& table, ArrowArray* out_array, ArrowSchema* out_schema) {
  if (out_schema) export_arrow_schema(table, out_schema);
  if (!out_array) return;
  auto shared = std::make_shared<const Table>(table);  // shares the buffers, copies no data
  fill_array(out_array, shared, {nullptr}, table.rows(), 0, table.num_columns());
  for (std::size_t i = 0; i < table.num_columns(); ++i) export_column(table.column(i), shared, out_array->children[i]);
}

void export_arrow_stream(std::vector<Table> batches, ArrowArrayStream* out) {
  if (batches.empty()) throw UsageError("export_arrow_stream: no batches (give one table of no rows for none)");
  for (const auto& b : batches)
    if (b.num_columns() != batches.front().num_columns())
      throw UsageError("export_arrow_stream: the batches have different columns");
  *out = ArrowArrayStream{};
  out->private_data = new StreamData{std::move(batches), 0, {}};
  out->get_schema = &stream_schema;
  out->get_next = &stream_next;
  out->get_last_error = &stream_error;
  out->release = &release_stream;
}

}  // namespace tandem
