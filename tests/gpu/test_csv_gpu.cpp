// CSV parsed on the GPU gives the CPU reader's table, field by field, or its error: quoted
// delimiters and line breaks across the device's 64-byte segments, CRLF, BOM, blank lines,
// missing values, ragged rows and bad numbers.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "scan/gpu/csv_device.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

void expect_same_tables(const Table& cpu, const Table& gpu, const std::string& what) {
  ASSERT_EQ(cpu.num_columns(), gpu.num_columns()) << what;
  ASSERT_EQ(cpu.rows(), gpu.rows()) << what;
  for (std::size_t j = 0; j < cpu.num_columns(); ++j) {
    const Column& a = cpu.column(j);
    const Column& b = gpu.column(j);
    ASSERT_EQ(a.name, b.name) << what;
    ASSERT_EQ(a.type, b.type) << what << " column " << a.name;
    for (std::size_t i = 0; i < a.length; ++i) {
      ASSERT_EQ(a.present(i), b.present(i)) << what << " column " << a.name << " row " << i;
      if (!a.present(i)) continue;
      if (a.type == ColumnType::str) {
        ASSERT_EQ(a.string(i), b.string(i)) << what << " column " << a.name << " row " << i;
      } else {
        const std::size_t w = value_width(a.type);
        ASSERT_EQ(std::memcmp(a.values.data() + i * w, b.values.data() + i * w, w), 0)
            << what << " column " << a.name << " row " << i;
      }
    }
  }
}

// The GPU read equals the CPU read (or throws the same error); `device_only`: and it ran on the
// device, with no fallback to the CPU reader.
void check_text(const std::string& text, bool device_only, const CsvOptions& options = {},
                const std::vector<std::string>& columns = {}) {
  Report report;
  std::string cpu_error, gpu_error;
  Table cpu, gpu;
  try {
    cpu = read_csv_text(text, options, "t.csv");
    if (!columns.empty()) {
      Table some;
      for (const auto& c : columns) some.add(cpu.column(c));
      cpu = some;
    }
  } catch (const Error& e) {
    cpu_error = e.what();
  }
  try {
    gpu = scan::read_csv_on_gpu(text, options, columns, report, "t.csv");
  } catch (const Error& e) {
    gpu_error = e.what();
  }
  ASSERT_EQ(cpu_error, gpu_error) << text.substr(0, 200);
  if (!cpu_error.empty()) return;
  expect_same_tables(cpu, gpu, text.substr(0, 200));
  if (device_only)
    for (const auto& n : report.notes)
      EXPECT_EQ(n.find("read on the CPU"), std::string::npos) << n << "\n" << text.substr(0, 200);
}

}  // namespace

TEST(GpuCsv, SmallCasesMatchTheCpuReader) {
  TANDEM_REQUIRE_GPU();
  // Parsed on the device.
  for (const char* t :
       {"a,b\n1,2\n3,4\n", "a,b\n1,2\n3,4", "a,b\r\n1,x\r\n3,y\r\n", "\xEF\xBB\xBFk,v\nx,1.5\ny,2\n",
        "k,v\n\n\"a,b\",1\n\n\"c\"\"d\",2\n", "k,v\n\"line\nbreak\",-0\n,\n\"\",3\n", "a,b\n", "a\n1\n\n2\n",
        "k\tv\nx\t1\ny\t\n", "k,v\nx,1e5\ny,-0.0\nz,7\n", "a,b,c\n1,,x\n,2.5,\n", "k,v\n\"\",\n\"\",\n"})
    check_text(t, true);
  // The CPU reader's answer or error, whichever path.
  for (const char* t : {"", "a,b\n1,2,3\n", "a,b\n1\n", "a,a\n1,2\n", "a,b\n\"x,1\n", "a,b\n\"x\"y,1\n",
                        "a,b\nx\"y,1\n", "k,v\nx,inf\ny,nan\n", "k,v\nx,007\n", "k,v\nx,1234567890123456789\n",
                        "k,v\nx,\"12\"\n", "k,v\nx,1e400\n", "a,b\n1,2\r", "a\n\"\n"})
    check_text(t, false);
}

TEST(GpuCsv, SchemaAndColumnSubsets) {
  TANDEM_REQUIRE_GPU();
  const std::string t = "k,v,w\nx,1,2.5\ny,,3\nz,3,\n";
  check_text(t, true, {.schema = parse_csv_schema("v:f64")});
  check_text(t, true, {.schema = parse_csv_schema("v:str,w:f64")});
  check_text(t, true, {}, {"w", "k"});
  check_text(t, false, {.schema = parse_csv_schema("k:i64")});  // 'x' is not an i64: the CPU reader's error
  check_text(t, false, {}, {"nope"});
}

TEST(GpuCsv, RandomQuotedFilesAcrossSegments) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(11);
  for (int round = 0; round < 6; ++round) {
    std::string text = round % 2 ? "name,n,x\r\n" : "name,n,x\n";
    const char* eol = round % 2 ? "\r\n" : "\n";
    const int rows = 1 + static_cast<int>(rng() % 20000);
    for (int r = 0; r < rows; ++r) {
      switch (rng() % 5) {
        case 0: text += "\"a,b\nc\"\"d\""; break;  // delimiter, line break and escaped quote inside quotes
        case 1: text += "plain" + std::to_string(rng() % 1000); break;
        case 2: text += "\"\""; break;
        case 3: break;  // missing
        default: text += std::string(static_cast<std::size_t>(rng() % 90), 'z'); break;
      }
      text += ',' + (rng() % 7 ? std::to_string(static_cast<long long>(rng() % 2000000) - 1000000) : std::string());
      text +=
          ',' + (rng() % 9 ? std::to_string(rng() % 100000) + "." + std::to_string(rng() % 1000000) : std::string());
      if (r + 1 < rows || round % 3) text += eol;
    }
    check_text(text, true);
  }
}

TEST(GpuCsv, GeneratedGroupByData) {
  TANDEM_REQUIRE_GPU();
  GroupByDataSpec spec;
  spec.rows = 200000;
  spec.nas_percent = 5;
  std::ostringstream out;
  write_csv(out, generate_groupby_table(spec));
  check_text(out.str(), true);
  check_text(out.str(), true, {}, {"id3", "v3"});
}
