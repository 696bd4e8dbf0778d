// What must hold on hostile input: exceptions leave parallel work on the calling thread, never
// through OpenMP; TANDEM_THREADS is range-checked; floats beyond f64 are errors, not text; CSV
// inputs whose size says nothing (FIFOs, /proc files) are read; a million columns cost linear time.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table/files.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

// Sets an environment variable for one scope, restoring what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string csv_error(std::string_view text, CsvOptions o = {}) {
  try {
    (void)read_csv_text(text, o, "t.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Parallel, ForCarriesTheFirstExceptionOut) {
  for (int threads : {1, 2, 4}) {
    std::atomic<int> ran{0};
    EXPECT_THROW(parallel_for(1000, threads,
                              [&](std::size_t i) {
                                ++ran;
                                if (i == 3) throw std::bad_alloc();
                              }),
                 std::bad_alloc)
        << threads;
    EXPECT_GE(ran.load(), 1);
    std::atomic<std::size_t> sum{0};
    parallel_for(1000, threads, [&](std::size_t i) { sum += i; });
    EXPECT_EQ(sum.load(), 999u * 1000 / 2);
  }
  // Every body throws: exactly one exception arrives, and it is one of theirs.
  try {
    parallel_for(64, 4, [](std::size_t i) { throw InputError("body " + std::to_string(i)); });
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("body ", 0), 0u);
  }
}

TEST(Parallel, StateAndRegionFailuresArriveOnTheCaller) {
  std::atomic<int> made{0};
  EXPECT_THROW(parallel_for_with(
                   100, 3,
                   [&]() -> int {
                     if (++made == 1) throw std::bad_alloc();  // the first state made (states are made lazily)
                     return 0;
                   },
                   [](int&, std::size_t) {}),
               std::bad_alloc);
  std::atomic<std::size_t> seen{0};
  parallel_for_with(
      100, 3, [] { return std::size_t{1}; }, [&](std::size_t& one, std::size_t) { seen += one; });
  EXPECT_EQ(seen.load(), 100u);
  EXPECT_THROW(parallel_region(4,
                               [](int t, int) {
                                 if (t == 0) throw UsageError("thread 0");
                               }),
               UsageError);
}

TEST(Parallel, ThreadsVariableIsRangeCheckedAsTheOption) {
  for (const char* bad : {"100000", "4097", "0", "-1", "abc", "4x", " 4", "1e3", "99999999999999999999"}) {
    const ScopedEnv env("TANDEM_THREADS", bad);
    try {
      (void)default_threads();
      ADD_FAILURE() << bad << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("TANDEM_THREADS: must be an integer from 1 to 4096", 0), 0u) << e.what();
    }
    EXPECT_THROW(check_thread_environment(), UsageError) << bad;
  }
  {
    const ScopedEnv env("TANDEM_THREADS", "3");
    EXPECT_EQ(default_threads(), 3);
  }
  {
    const ScopedEnv env("TANDEM_THREADS", "4096");
    EXPECT_EQ(default_threads(), 4096);
  }
  const ScopedEnv env("TANDEM_THREADS", "");  // empty: as if unset
  EXPECT_GE(default_threads(), 1);
}

// 1e309 and its kin are beyond f64: an error naming file, line and column, never a switch to str
// (which made max(v) answer 9 for 10, 9, 1e309). On every piece size.
TEST(CsvNumbers, FloatsBeyondF64AreErrorsNotText) {
  const std::string want =
      "t.csv:4: column 2 ('v'): '1e309' is beyond the range of f64 (write inf for infinity, or name the column's "
      "type str in the schema to keep it as text)";
  for (std::size_t chunk : {0, 1, 4, 9}) {
    const CsvOptions o{.threads = 3, .chunk_bytes = chunk};
    EXPECT_EQ(csv_error("k,v\na,10\nb,9\nc,1e309\n", o), want) << chunk;
    EXPECT_EQ(csv_error("k,v\na,10.5\nb,9\nc,1e309\n", o).substr(0, 40), want.substr(0, 40)) << chunk;
    EXPECT_NE(csv_error("k,v\nc,-1e309\n", o).find("'-1e309' is beyond the range of f64"), std::string::npos);
    EXPECT_NE(csv_error("k,v\nc,1.8e308\nd,2\n", o).find("'1.8e308' is beyond"), std::string::npos);
    EXPECT_NE(csv_error("k,v\nc,1\nd,1e309\ne,1.5\n", o).find("t.csv:3"), std::string::npos);
  }
  // A column that is text anyway keeps the value as written, on any piece size.
  for (std::size_t chunk : {0, 1, 4}) {
    const Table t = read_csv_text("v\n1e309\nabc\n2\n", {.threads = 2, .chunk_bytes = chunk}, "t.csv");
    ASSERT_EQ(t.column("v").type, ColumnType::str);
    EXPECT_EQ(t.column("v").string(0), "1e309");
  }
  // The largest finite double, inf and tiny values still read as numbers.
  const Table ok = read_csv_text("v\n1.7976931348623157e308\ninf\n-inf\n1e-400\n", {}, "t.csv");
  ASSERT_EQ(ok.column("v").type, ColumnType::f64);
  EXPECT_EQ(ok.column("v").numbers<double>()[0], 1.7976931348623157e308);
  // A schema's f64 is checked the same way (no silent ±inf either).
  EXPECT_EQ(csv_error("v\n1e309\n", {.schema = parse_csv_schema("v:f64")}),
            "t.csv:2: column 1 ('v'): '1e309' is out of the range of an f64");
}

// Inputs whose st_size says nothing are read to their end: a FIFO and a /proc file.
TEST(CsvInputs, FifoAndProcFilesAreRead) {
  TempDir dir;
  const std::string fifo = dir.file("in.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "k,v\na,1\nb,2\n"; });
  const Table t = read_csv(fifo);
  writer.join();
  EXPECT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.column("v").numbers<std::int64_t>()[1], 2);
  struct stat st {};
  if (::stat("/proc/sys/kernel/ostype", &st) == 0) {
    EXPECT_EQ(st.st_size, 0);
    const Table p = read_csv("/proc/sys/kernel/ostype");  // "Linux\n": a header of one column
    EXPECT_EQ(p.num_columns(), 1u);
    EXPECT_EQ(p.column(0).name, "Linux");
  }
}

// A million columns: adding them and reading a CSV header of them take linear time (this ran
// for minutes when each name was searched among all earlier ones).
TEST(Table, MillionColumnsTakeLinearTime) {
  constexpr std::size_t kColumns = 1'000'000;
  std::string header;
  header.reserve(kColumns * 8);
  for (std::size_t i = 0; i < kColumns; ++i) header += (i ? ",c" : "c") + std::to_string(i);
  const Table t = read_csv_text(header + "\n", {.threads = 2}, "wide.csv");
  ASSERT_EQ(t.num_columns(), kColumns);
  EXPECT_EQ(t.rows(), 0u);
  EXPECT_EQ(t.find("c999999"), &t.column(kColumns - 1));
  EXPECT_EQ(t.find("c"), nullptr);
  try {
    (void)t.column("nope");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_LT(std::string(e.what()).size(), 1000u);  // names a few columns, not a million
    EXPECT_NE(std::string(e.what()).find(" and 999968 more"), std::string::npos) << e.what();
  }
  Table copy = t;
  EXPECT_THROW(copy.add(make_column<std::int64_t>("c5", {})), UsageError);
  EXPECT_EQ(copy.find("c5"), &copy.column(5));
  // A duplicated name in a wide header is named with its first place.
  EXPECT_NE(csv_error(header + ",c17\n").find("the header names column 18 'c17' again"), std::string::npos);
}

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
std::size_t entries(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}
}  // namespace

// A distributed run that fails on another rank after this one renamed its output into place
// removes that output and gives the path back what it held: a file, or a table folder.
TEST(PreviousOutput, GivesBackAReplacedFileOrFolder) {
  TempDir dir;
  const std::string file = dir.file("out.csv");
  std::ofstream(file) << "old\n";
  {
    io::PreviousOutput kept(file);
    EXPECT_TRUE(kept.kept());
    io::AtomicOutput out(file);
    out.stream() << "new\n";
    out.commit();
    EXPECT_EQ(slurp(file), "new\n");
    std::filesystem::remove(file);
    kept.restore();
  }
  EXPECT_EQ(slurp(file), "old\n");
  EXPECT_EQ(entries(dir.path), 1u);  // nothing kept beside it any more

  const std::string folder = dir.file("t");
  Table t;
  t.add(make_column<std::int64_t>("a", {1, 2}));
  write_table_folder(folder, t);
  {
    io::PreviousOutput kept(folder + "/");  // "t/" names the folder
    Table u;
    u.add(make_column<std::int64_t>("b", {3}));
    write_table_folder(folder, u);
    std::filesystem::remove_all(folder);
    kept.restore();
  }
  const Table back = read_table_folder(folder);
  ASSERT_EQ(back.num_columns(), 1u);
  EXPECT_EQ(back.column(0).name, "a");
  EXPECT_EQ(back.rows(), 2u);
  EXPECT_EQ(entries(dir.path), 2u);
}

// The run's output stays: the kept copy goes; an absent path or a device keeps nothing.
TEST(PreviousOutput, KeepsNothingOnceTheNewOutputStays) {
  TempDir dir;
  const std::string file = dir.file("out.csv");
  std::ofstream(file) << "old\n";
  { io::PreviousOutput kept(file); }
  EXPECT_EQ(slurp(file), "old\n");
  EXPECT_EQ(entries(dir.path), 1u);
  io::PreviousOutput absent(dir.file("none.csv"));
  EXPECT_FALSE(absent.kept());
  absent.restore();  // nothing to give back
  EXPECT_FALSE(std::filesystem::exists(dir.file("none.csv")));
  EXPECT_FALSE(io::PreviousOutput("/dev/null").kept());
}

// A column with no value at all is inferred as i64 by the table reader, as by the streaming
// scan: its sum is missing (pandas' min_count=1), not an error.
TEST(CsvNumbers, AColumnWithNoValueIsAnAllMissingI64) {
  for (const char* text : {"k,v\n", "k,v\na,\nb,\n"}) {
    const Table t = read_csv_text(text, {}, "empty.csv");
    EXPECT_EQ(t.column("v").type, ColumnType::i64) << text;
    const Table g = groupby(t, {{"k"}, parse_aggregations("sum(v)")}, GroupByOptions{Device::cpu, 1}).table;
    ASSERT_EQ(g.num_columns(), 2u);
    for (std::size_t i = 0; i < g.rows(); ++i) EXPECT_FALSE(g.column("sum_v").present(i)) << text;
  }
}

// A table folder's file names are checked by name alone: column x reserves x.valid.npy even when
// it has no missing value, so a column named x.valid is refused whether or not x has gaps.
TEST(TableFolder, FileNamesClashByNameAlone) {
  TempDir dir;
  for (const bool gaps : {false, true}) {
    Table t;
    t.add(make_column<std::int64_t>("x", {1, 2}, gaps ? std::vector<std::uint8_t>{1} : std::vector<std::uint8_t>{}));
    t.add(make_column<std::int64_t>("x.valid", {3, 4}));
    try {
      write_table_folder(dir.file("t"), t);
      FAIL() << "no error, gaps " << gaps;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("x.valid.npy is another column's too"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir.file("t")));
  }
}
