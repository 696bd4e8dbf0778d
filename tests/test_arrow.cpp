// The Arrow C Data / C Stream interfaces: arrays built by hand (as a producer would), read into
// tables in place, and tables written back out.
#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tandem/core/error.hpp"
#include "tandem/table/arrow.hpp"

using namespace tandem;

namespace {

// Owns the memory of hand-built arrays and counts how often a top-level array is released.
struct Producer {
  std::deque<std::vector<std::byte>> blobs;
  std::deque<std::vector<const void*>> buffer_lists;
  std::deque<ArrowArray> arrays;
  std::deque<std::vector<ArrowArray*>> array_children;
  std::deque<ArrowSchema> schemas;
  std::deque<std::vector<ArrowSchema*>> schema_children;
  int released{0};

  template <class T>
  const void* blob(const std::vector<T>& v) {
    auto& b = blobs.emplace_back(v.size() * sizeof(T) + 8);  // slack: a buffer may be read whole
    if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(T));
    return b.data();
  }
  const void* bits(const std::vector<int>& present) {
    std::vector<std::uint8_t> out((present.size() + 7) / 8, 0);
    for (std::size_t i = 0; i < present.size(); ++i)
      if (present[i]) out[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
    return blob(out);
  }
  const void* text(const std::string& s) { return blob(std::vector<char>(s.begin(), s.end())); }

  static void release_top(ArrowArray* a) {
    ++static_cast<Producer*>(a->private_data)->released;
    for (std::int64_t i = 0; i < a->n_children; ++i) a->children[i]->release = nullptr;
    if (a->dictionary) a->dictionary->release = nullptr;
    a->release = nullptr;
  }
  static void release_child(ArrowArray* a) { a->release = nullptr; }
  static void release_schema(ArrowSchema* s) { s->release = nullptr; }

  // A child array (released with its parent).
  ArrowArray* array(std::int64_t length, std::int64_t nulls, std::int64_t offset, std::vector<const void*> bufs,
                    std::vector<ArrowArray*> children = {}, ArrowArray* dictionary = nullptr) {
    auto& b = buffer_lists.emplace_back(std::move(bufs));
    auto& c = array_children.emplace_back(std::move(children));
    ArrowArray& a = arrays.emplace_back();
    a = ArrowArray{length,
                   nulls,
                   offset,
                   static_cast<std::int64_t>(b.size()),
                   static_cast<std::int64_t>(c.size()),
                   b.data(),
                   c.data(),
                   dictionary,
                   &release_child,
                   this};
    return &a;
  }
  // A top-level array: its release is counted.
  ArrowArray top(std::int64_t length, std::int64_t nulls, std::int64_t offset, std::vector<const void*> bufs,
                 std::vector<ArrowArray*> children = {}, ArrowArray* dictionary = nullptr) {
    ArrowArray a = *array(length, nulls, offset, std::move(bufs), std::move(children), dictionary);
    a.release = &release_top;
    return a;
  }
  ArrowSchema* schema(const char* format, const char* name, std::vector<ArrowSchema*> children = {},
                      ArrowSchema* dictionary = nullptr) {
    auto& c = schema_children.emplace_back(std::move(children));
    ArrowSchema& s = schemas.emplace_back();
    s = ArrowSchema{format,
                    name,
                    nullptr,
                    ARROW_FLAG_NULLABLE,
                    static_cast<std::int64_t>(c.size()),
                    c.data(),
                    dictionary,
                    &release_schema,
                    nullptr};
    return &s;
  }
};

std::vector<std::string> strings_of(const Column& c) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < c.length; ++i) out.push_back(c.present(i) ? std::string(c.string(i)) : "<NA>");
  return out;
}

template <class T>
std::vector<std::string> numbers_of(const Column& c) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < c.length; ++i) out.push_back(c.present(i) ? std::to_string(c.numbers<T>()[i]) : "<NA>");
  return out;
}

using S = std::vector<std::string>;

}  // namespace

TEST(Arrow, NumbersAreLentAndReleasedOnce) {
  Producer p;
  const void* values = p.blob(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const void* validity = p.bits({1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1});
  ArrowArray a = p.top(9, 2, 3, {validity, values});  // rows 3..11: a slice not on a byte boundary
  {
    const Table t = table_from_arrow(&a, *p.schema("l", "x"));
    EXPECT_EQ(a.release, nullptr);  // moved into the table
    const Column& c = t.column("x");
    EXPECT_EQ(c.type, ColumnType::i64);
    EXPECT_EQ(static_cast<const void*>(c.values.data()), static_cast<const std::byte*>(values) + 3 * 8);
    EXPECT_EQ(numbers_of<std::int64_t>(c), (S{"<NA>", "5", "6", "7", "8", "9", "10", "<NA>", "12"}));
    EXPECT_EQ(p.released, 0);
    Table copy = t;  // columns share the array: still one release
    (void)copy;
  }
  EXPECT_EQ(p.released, 1);
}

TEST(Arrow, EveryNumberTypeWithMissingRows) {
  Producer p;
  const void* v = p.bits({1, 0, 1});
  std::vector<ArrowArray*> arrays{
      p.array(3, 1, 0, {v, p.blob(std::vector<std::int8_t>{-1, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::uint8_t>{255, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::int16_t>{-300, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::uint16_t>{65535, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::int32_t>{-5, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::uint32_t>{4000000000u, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::int64_t>{-5, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::uint64_t>{18446744073709551615ull, 0, 7})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::uint16_t>{0x3e00, 0, 0xc000})}),  // 1.5, -, -2
      p.array(3, 1, 0, {v, p.blob(std::vector<float>{1.5f, 0, -0.0f})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<double>{2.5, 0, 1e300})}),
      p.array(3, 1, 0, {v, p.bits({1, 1, 0})}),
      p.array(3, 0, 0, {nullptr, p.blob(std::vector<std::int32_t>{19000, 1, 2})}),
      p.array(3, 1, 0, {v, p.blob(std::vector<std::int64_t>{1700000000000, 0, -1})}),
  };
  const char* formats[] = {"c", "C", "s", "S", "i", "I", "l", "L", "e", "f", "g", "b", "tdD", "tsm:UTC"};
  const char* names[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "b", "d", "ts"};
  std::vector<ArrowSchema*> fields;
  for (std::size_t i = 0; i < arrays.size(); ++i) fields.push_back(p.schema(formats[i], names[i]));
  ArrowArray batch = p.top(3, 0, 0, {nullptr}, arrays);
  const Table t = table_from_arrow(&batch, *p.schema("+s", "", fields));
  ASSERT_EQ(t.num_columns(), 14u);
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("i8")), (S{"-1", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("u8")), (S{"255", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("i16")), (S{"-300", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("u16")), (S{"65535", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("i32")), (S{"-5", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<std::uint32_t>(t.column("u32")), (S{"4000000000", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<std::int64_t>(t.column("i64")), (S{"-5", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<std::uint64_t>(t.column("u64")), (S{"18446744073709551615", "<NA>", "7"}));
  EXPECT_EQ(numbers_of<float>(t.column("f16")), (S{"1.500000", "<NA>", "-2.000000"}));
  EXPECT_EQ(numbers_of<float>(t.column("f32")), (S{"1.500000", "<NA>", "-0.000000"}));
  EXPECT_TRUE(std::signbit(t.column("f32").numbers<float>()[2]));
  EXPECT_EQ(t.column("f64").numbers<double>()[2], 1e300);
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("b")), (S{"1", "<NA>", "0"}));
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("d")), (S{"19000", "1", "2"}));
  EXPECT_TRUE(t.column("d").validity.empty());
  EXPECT_EQ(numbers_of<std::int64_t>(t.column("ts")), (S{"1700000000000", "<NA>", "-1"}));
}

TEST(Arrow, StringsOfEveryLayoutWithSlices) {
  Producer p;
  const std::string bytes = "xxapplebananacherry";
  const void* data = p.text(bytes);
  const void* v = p.bits({1, 1, 0, 1});
  // rows: "xx", "apple", <NA>, "banana"; read from offset 1
  ArrowArray* utf8 = p.array(4, 1, 0, {v, p.blob(std::vector<std::int32_t>{0, 2, 7, 7, 13}), data});
  ArrowArray* large = p.array(4, 1, 0, {v, p.blob(std::vector<std::int64_t>{0, 2, 7, 7, 13}), data});
  // string_view: one inline, one out of line (> 12 bytes), one missing, one empty
  const std::string longer = "a string longer than twelve";
  std::vector<std::byte> views(4 * 16);
  auto put = [&](std::size_t row, std::int32_t len, const char* inline_bytes, std::int32_t buf, std::int32_t at) {
    std::memcpy(views.data() + 16 * row, &len, 4);
    if (len <= 12) std::memcpy(views.data() + 16 * row + 4, inline_bytes, static_cast<std::size_t>(len));
    else
      std::memcpy(views.data() + 16 * row + 4, inline_bytes, 4), std::memcpy(views.data() + 16 * row + 8, &buf, 4),
          std::memcpy(views.data() + 16 * row + 12, &at, 4);
  };
  put(0, 2, "zz", 0, 0);
  put(1, static_cast<std::int32_t>(longer.size()), longer.data(), 0, 0);
  put(3, 0, "", 0, 0);
  ArrowArray* view = p.array(
      4, 1, 0,
      {v, p.blob(views), p.text(longer), p.blob(std::vector<std::int64_t>{static_cast<std::int64_t>(longer.size())})});
  ArrowArray batch = p.top(3, 0, 1, {nullptr}, {utf8, large, view});
  const Table t =
      table_from_arrow(&batch, *p.schema("+s", "", {p.schema("u", "a"), p.schema("U", "b"), p.schema("vu", "c")}));
  EXPECT_EQ(strings_of(t.column("a")), (S{"apple", "<NA>", "banana"}));
  EXPECT_EQ(strings_of(t.column("b")), (S{"apple", "<NA>", "banana"}));
  EXPECT_EQ(strings_of(t.column("c")), (S{longer, "<NA>", ""}));
  EXPECT_EQ(static_cast<const void*>(t.column("a").values.data()), static_cast<const char*>(data) + 2);
}

TEST(Arrow, ValidityOnAByteBoundaryIsLent) {
  Producer p;
  std::vector<double> values(20);
  for (int i = 0; i < 20; ++i) values[i] = i;
  std::vector<int> present(20, 1);
  present[9] = 0;
  const void* bits = p.bits(present);
  ArrowArray a = p.top(10, 1, 8, {bits, p.blob(values)});
  const Table t = table_from_arrow(&a, *p.schema("g", "v"));
  EXPECT_EQ(static_cast<const void*>(t.column(0).validity.data()), static_cast<const std::uint8_t*>(bits) + 1);
  EXPECT_EQ(numbers_of<double>(t.column(0))[1], "<NA>");
  EXPECT_EQ(t.column(0).numbers<double>()[0], 8.0);
}

TEST(Arrow, DictionariesDecodedOrAsCodes) {
  for (const auto mode : {ArrowImportOptions::Dictionaries::decode, ArrowImportOptions::Dictionaries::codes}) {
    Producer p;
    ArrowArray* dict = p.array(3, 0, 0, {nullptr, p.blob(std::vector<std::int32_t>{0, 2, 5, 8}), p.text("idid2id3")});
    ArrowArray a = p.top(5, 1, 0, {p.bits({1, 1, 0, 1, 1}), p.blob(std::vector<std::int8_t>{2, 0, 9, 1, 2})}, {}, dict);
    ArrowImportOptions o;
    o.dictionaries = mode;
    const Table t = table_from_arrow(&a, *p.schema("c", "k", {}, p.schema("u", "")), o);
    if (mode == ArrowImportOptions::Dictionaries::decode)
      EXPECT_EQ(strings_of(t.column("k")), (S{"id3", "id", "<NA>", "id2", "id3"}));
    else EXPECT_EQ(numbers_of<std::int32_t>(t.column("k")), (S{"2", "0", "<NA>", "1", "2"}));
  }
  Producer p;  // a code beyond the dictionary
  ArrowArray* dict = p.array(1, 0, 0, {nullptr, p.blob(std::vector<std::int32_t>{0, 1}), p.text("a")});
  ArrowArray a = p.top(1, 0, 0, {nullptr, p.blob(std::vector<std::int32_t>{3})}, {}, dict);
  EXPECT_THROW((void)table_from_arrow(&a, *p.schema("i", "k", {}, p.schema("u", ""))), InputError);
  EXPECT_EQ(p.released, 1);
}

namespace {
// A stream over hand-built batches; counts its own release.
struct HandStream {
  Producer* p;
  std::vector<ArrowArray> batches;
  ArrowSchema* schema;
  std::size_t next{0};
  int released{0};
  bool fail_second{false};

  static HandStream* self(ArrowArrayStream* s) { return static_cast<HandStream*>(s->private_data); }
  ArrowArrayStream stream() {
    ArrowArrayStream s{};
    s.get_schema = [](ArrowArrayStream* s, ArrowSchema* out) {
      *out = *self(s)->schema;
      return 0;
    };
    s.get_next = [](ArrowArrayStream* s, ArrowArray* out) {
      auto* h = self(s);
      if (h->fail_second && h->next == 1) return EIO;
      if (h->next == h->batches.size()) *out = ArrowArray{};
      else *out = h->batches[h->next++];
      return 0;
    };
    s.get_last_error = [](ArrowArrayStream*) -> const char* { return "disk gone"; };
    s.release = [](ArrowArrayStream* s) {
      ++self(s)->released;
      s->release = nullptr;
    };
    s.private_data = this;
    return s;
  }
};

ArrowArray int_batch(Producer& p, std::vector<std::int32_t> v, std::vector<std::string> s) {
  std::vector<std::int32_t> offsets{0};
  std::string bytes;
  for (const auto& x : s) bytes += x, offsets.push_back(static_cast<std::int32_t>(bytes.size()));
  const auto n = static_cast<std::int64_t>(v.size());
  return p.top(n, 0, 0, {nullptr},
               {p.array(n, 0, 0, {nullptr, p.blob(v)}), p.array(n, 0, 0, {nullptr, p.blob(offsets), p.text(bytes)})});
}
}  // namespace

TEST(Arrow, StreamsOfSeveralBatches) {
  Producer p;
  ArrowSchema* schema = p.schema("+s", "", {p.schema("i", "n"), p.schema("u", "s")});
  HandStream h{&p, {int_batch(p, {1, 2}, {"a", "bb"}), int_batch(p, {}, {}), int_batch(p, {3}, {"ccc"})}, schema};
  ArrowArrayStream s = h.stream();
  const Table t = table_from_arrow_stream(&s);
  EXPECT_EQ(h.released, 1);
  EXPECT_EQ(s.release, nullptr);
  EXPECT_EQ(numbers_of<std::int32_t>(t.column("n")), (S{"1", "2", "3"}));
  EXPECT_EQ(strings_of(t.column("s")), (S{"a", "bb", "ccc"}));
  EXPECT_EQ(p.released, 3);  // concatenated: each batch released once, already

  Producer q;
  ArrowSchema* schema2 = q.schema("+s", "", {q.schema("i", "n"), q.schema("u", "s")});
  HandStream h2{&q, {int_batch(q, {1}, {"a"}), int_batch(q, {2, 3}, {"b", "c"})}, schema2};
  ArrowArrayStream s2 = h2.stream();
  std::vector<Table> kept;
  ArrowImportOptions only_s;
  only_s.columns = {"s"};
  for_each_arrow_batch(
      &s2, [&](Table t) { kept.push_back(std::move(t)); }, only_s);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[1].num_columns(), 1u);
  EXPECT_EQ(strings_of(kept[1].column("s")), (S{"b", "c"}));
  EXPECT_EQ(q.released, 0);  // the kept tables still lend the batches
  kept.clear();
  EXPECT_EQ(q.released, 2);
}

TEST(Arrow, EmptyStreamsAndTables) {
  Producer p;
  HandStream h{&p, {}, p.schema("+s", "", {p.schema("g", "x"), p.schema("vu", "s")})};
  ArrowArrayStream s = h.stream();
  const Table t = table_from_arrow_stream(&s);
  EXPECT_EQ(t.num_columns(), 2u);
  EXPECT_EQ(t.rows(), 0u);
  EXPECT_EQ(t.column("s").type, ColumnType::str);
  EXPECT_EQ(h.released, 1);

  ArrowArray empty = int_batch(p, {}, {});
  const Table e = table_from_arrow(&empty, *p.schema("+s", "", {p.schema("i", "n"), p.schema("u", "s")}));
  EXPECT_EQ(e.rows(), 0u);
  EXPECT_EQ(e.column("s").string_offsets().size(), 1u);
}

TEST(Arrow, StreamErrorsCarryTheProducersMessage) {
  Producer p;
  ArrowSchema* schema = p.schema("+s", "", {p.schema("i", "n"), p.schema("u", "s")});
  HandStream h{&p, {int_batch(p, {1}, {"a"}), int_batch(p, {2}, {"b"})}, schema};
  h.fail_second = true;
  ArrowArrayStream s = h.stream();
  try {
    (void)table_from_arrow_stream(&s);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("disk gone"), std::string::npos) << e.what();
  }
  EXPECT_EQ(h.released, 1);
  EXPECT_EQ(p.released, 1);
}

TEST(Arrow, UnsupportedTypesAreRefusedByName) {
  for (const char* format : {"+l", "+s", "d:10,2", "w:16", "+m", "n"}) {
    Producer p;
    ArrowArray* ok = p.array(1, 0, 0, {nullptr, p.blob(std::vector<std::int32_t>{1})});
    ArrowArray* bad = p.array(1, 0, 0, {nullptr, p.blob(std::vector<std::int64_t>{0, 0})});
    ArrowArray batch = p.top(1, 0, 0, {nullptr}, {ok, bad});
    try {
      (void)table_from_arrow(&batch, *p.schema("+s", "", {p.schema("i", "fine"), p.schema(format, "price")}));
      FAIL() << format;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("column 'price'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(format), std::string::npos) << e.what();
    }
    EXPECT_EQ(p.released, 1) << format;
  }
  Producer p;
  ArrowArray a = p.top(1, 0, 0, {nullptr, p.blob(std::vector<std::int32_t>{1})});
  ArrowImportOptions o;
  o.columns = {"nope"};
  EXPECT_THROW((void)table_from_arrow(&a, *p.schema("+s", "", {}), o), UsageError);
}

TEST(Arrow, ExportLendsTheTablesBuffersUntilReleased) {
  ArrowArray array{};
  ArrowSchema schema{};
  const void* numbers = nullptr;
  {
    Table t({make_column<double>("v", {1.5, -2, 3}, make_validity(3, [](std::size_t i) { return i != 1; })),
             make_string_column("k", {"x", "", "zzz"})});
    numbers = t.column("v").values.data();
    export_arrow(t, &array, &schema);
  }  // the exported array keeps the buffers
  EXPECT_STREQ(schema.format, "+s");
  ASSERT_EQ(schema.n_children, 2);
  EXPECT_STREQ(schema.children[0]->format, "g");
  EXPECT_STREQ(schema.children[1]->format, "U");
  EXPECT_STREQ(schema.children[1]->name, "k");
  EXPECT_EQ(array.children[0]->null_count, 1);
  EXPECT_EQ(array.children[0]->buffers[1], numbers);
  const Table back = table_from_arrow(&array, schema);  // both ways without a copy of the numbers
  EXPECT_EQ(static_cast<const void*>(back.column("v").values.data()), numbers);
  EXPECT_EQ(numbers_of<double>(back.column("v")), (S{"1.500000", "<NA>", "3.000000"}));
  EXPECT_EQ(strings_of(back.column("k")), (S{"x", "", "zzz"}));
  schema.release(&schema);
  EXPECT_EQ(schema.release, nullptr);
}

TEST(Arrow, ExportedStreamsReadBack) {
  Table a({make_column<std::int64_t>("n", {1, 2}), make_string_column("s", {"p", "q"})});
  Table b({make_column<std::int64_t>("n", {3}), make_string_column("s", {"r"})});
  ArrowArrayStream s{};
  export_arrow_stream({a, b}, &s);
  int batches = 0;
  std::vector<Table> parts;
  for_each_arrow_batch(&s, [&](Table t) { ++batches, parts.push_back(std::move(t)); });
  EXPECT_EQ(batches, 2);
  EXPECT_EQ(s.release, nullptr);
  const Table all = concatenate(parts);
  EXPECT_EQ(numbers_of<std::int64_t>(all.column("n")), (S{"1", "2", "3"}));
  EXPECT_EQ(strings_of(all.column("s")), (S{"p", "q", "r"}));

  ArrowArrayStream empty{};
  export_arrow_stream({Table({make_column<float>("f", {})})}, &empty);
  const Table e = table_from_arrow_stream(&empty);
  EXPECT_EQ(e.rows(), 0u);
  EXPECT_EQ(e.column("f").type, ColumnType::f32);
  EXPECT_THROW(concatenate({a, Table({make_column<double>("n", {1.0}), make_string_column("s", {"r"})})}), UsageError);
}
