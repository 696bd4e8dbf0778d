// Columns from array files; tables as folders of .npy files: layout, round trip, replacement.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/table/files.hpp"
#include "test_util.hpp"

using namespace tandem;
namespace fs = std::filesystem;

namespace {

Table sample_table() {
  Table t;
  t.add(make_string_column("name", {"a,b", "", "caf\xc3\xa9", "x"},
                           make_validity(4, [](std::size_t i) { return i != 3; })));
  t.add(make_column<std::int32_t>("i32", {1, -2, 3, 4}));
  t.add(make_column<std::uint64_t>("u64", {1, 2, 3, ~std::uint64_t{0}},
                                   make_validity(4, [](std::size_t i) { return i != 0; })));
  t.add(make_column<double>("f64", {0.5, -0.0, NAN, INFINITY}));
  t.add(make_column<float>("f32", {1.5f, 2, 3, 4}));
  return t;
}

}  // namespace

TEST(TableFiles, ReadColumnFromNpyAndRaw) {
  TempDir d;
  const std::vector<std::int64_t> v{5, -6, 7};
  io::write_vector<std::int64_t>(d.file("v.npy"), v);
  io::write_vector<std::int64_t>(d.file("v.raw"), v);
  for (const char* f : {"v.npy", "v.raw"}) {
    const Column c = read_column("v", d.file(f), DType::i64);
    EXPECT_EQ(c.type, ColumnType::i64);
    ASSERT_EQ(c.length, 3u);
    EXPECT_EQ(c.numbers<std::int64_t>()[1], -6);
  }
  EXPECT_THROW(read_column("v", d.file("v.npy"), DType::f64), InputError);  // the header says i64
  EXPECT_THROW(read_column("v", d.file("v.raw"), DType::u8), UsageError);
  EXPECT_THROW(read_column("v", d.file("none.npy"), DType::i64), InputError);
}

TEST(TableFiles, FolderRoundTripAndLayout) {
  TempDir d;
  const Table t = sample_table();
  const std::string dir = d.file("out");
  write_table_folder(dir + "/", t);
  for (const char* f : {"table.json", "name.offsets.npy", "name.bytes", "name.valid.npy", "i32.npy", "u64.npy",
                        "u64.valid.npy", "f64.npy", "f32.npy"})
    EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
  EXPECT_FALSE(fs::exists(fs::path(dir) / "i32.valid.npy"));
  EXPECT_EQ(fs::file_size(fs::path(dir) / "name.bytes"), 9u);  // "a,b" + "" + "café" + "x"
  const Table back = read_table_folder(dir);
  ASSERT_EQ(back.num_columns(), 5u);
  EXPECT_EQ(back.column(0).name, "name");  // column order from table.json
  EXPECT_EQ(back.column("name").string(2), "caf\xc3\xa9");
  EXPECT_TRUE(back.column("name").present(1));
  EXPECT_FALSE(back.column("name").present(3));
  EXPECT_FALSE(back.column("u64").present(0));
  EXPECT_EQ(back.column("u64").numbers<std::uint64_t>()[3], ~std::uint64_t{0});
  EXPECT_TRUE(std::signbit(back.column("f64").numbers<double>()[1]));
  EXPECT_TRUE(std::isnan(back.column("f64").numbers<double>()[2]));
  EXPECT_EQ(back.column("i32").numbers<std::int32_t>()[1], -2);
  EXPECT_EQ(back.column("f32").numbers<float>()[0], 1.5f);
}

TEST(TableFiles, ReplacesOnlyTableFoldersAndEmptyFolders) {
  TempDir d;
  const std::string dir = d.file("t");
  write_table_folder(dir, sample_table());
  Table small;
  small.add(make_column<std::int64_t>("only", {1}));
  write_table_folder(dir, small);  // a table folder: replaced whole
  EXPECT_FALSE(fs::exists(fs::path(dir) / "name.bytes"));
  EXPECT_EQ(read_table_folder(dir).num_columns(), 1u);
  fs::create_directory(d.file("empty"));
  write_table_folder(d.file("empty"), small);
  fs::create_directory(d.file("mine"));
  std::ofstream(d.file("mine/notes.txt")) << "keep me";
  EXPECT_THROW(write_table_folder(d.file("mine"), small), InputError);
  EXPECT_TRUE(fs::exists(d.file("mine/notes.txt")));
  std::ofstream(d.file("file")) << "x";
  EXPECT_THROW(write_table_folder(d.file("file"), small), InputError);
  std::size_t entries = 0;
  for (const auto& e : fs::directory_iterator(d.path))
    entries += e.path().filename().string().find(".tmp-") != std::string::npos;
  EXPECT_EQ(entries, 0u);  // no staging folder left behind
}

TEST(TableFiles, NamesThatCannotBeFiles) {
  TempDir d;
  Table slash;
  slash.add(make_column<std::int64_t>("a/b", {1}));
  EXPECT_THROW(write_table_folder(d.file("x"), slash), UsageError);
  Table clash;  // a's validity file is a.valid.npy, the number column a.valid's file too
  clash.add(make_column<std::int64_t>("a", {1}, make_validity(1, [](std::size_t) { return false; })));
  clash.add(make_column<std::int64_t>("a.valid", {1}));
  EXPECT_THROW(write_table_folder(d.file("y"), clash), UsageError);
  Table clash_any;  // the same names with no missing value: refused alike (the check is by names)
  clash_any.add(make_column<std::int64_t>("a", {1}));
  clash_any.add(make_column<std::int64_t>("a.valid", {1}));
  EXPECT_THROW(write_table_folder(d.file("y"), clash_any), UsageError);
  EXPECT_FALSE(fs::exists(d.file("x")));
  EXPECT_FALSE(fs::exists(d.file("y")));
}

TEST(TableFiles, MismatchedFilesAreInputErrors) {
  TempDir d;
  const std::string dir = d.file("t");
  write_table_folder(dir, sample_table());
  io::write_vector<std::uint64_t>(dir + "/name.offsets.npy", std::vector<std::uint64_t>{0, 1});
  EXPECT_THROW(read_table_folder(dir), InputError);
  write_table_folder(dir, sample_table());
  io::write_vector<double>(dir + "/f64.npy", std::vector<double>{1, 2});
  EXPECT_THROW(read_table_folder(dir), InputError);
  std::ofstream(dir + "/table.json") << "{\"rows\": 4, \"columns\": [{\"name\": \"x\", \"type\": \"i128\"}]}";
  EXPECT_THROW(read_table_folder(dir), InputError);
  EXPECT_THROW(read_table_folder(d.file("absent")), InputError);
}

TEST(TableFiles, NumpyReadsTheFolder) {
  if (std::system("/usr/bin/python3 -c 'import numpy' 2>/dev/null") != 0) GTEST_SKIP() << "no numpy";
  TempDir d;
  const std::string dir = d.file("t");
  write_table_folder(dir, sample_table());
  const std::string script = fmt::format(
      "/usr/bin/python3 -c \""
      "import numpy as np, json; d='{}'; m=json.load(open(d+'/table.json')); n=m['rows'];"
      "o=np.load(d+'/name.offsets.npy'); b=open(d+'/name.bytes','rb').read();"
      "s=[b[o[i]:o[i+1]] for i in range(n)];"
      "p=np.unpackbits(np.load(d+'/name.valid.npy'), bitorder='little')[:n];"
      "u=np.load(d+'/u64.npy'); f=np.load(d+'/f32.npy');"
      "assert s[2]=='caf\\u00e9'.encode() and list(p)==[1,1,1,0] and u.dtype==np.uint64 and u[3]==2**64-1 and f[0]==1.5"
      "\"",
      dir);
  EXPECT_EQ(std::system(script.c_str()), 0);
}
