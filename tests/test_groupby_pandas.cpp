// tandem::groupby against pandas (Debian's python3-pandas) on generated data with missing keys
// and values: the table goes out as CSV, a short script groups it with pandas, the answers are
// compared cell by cell. Skips when /usr/bin/python3 has no pandas.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tandem/groupby.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

constexpr const char* kScript = R"(import sys, pandas as pd
t = pd.read_csv(sys.argv[1], dtype={'id1': str, 'id2': str, 'id3': str})
g = t.groupby(sys.argv[3].split(','), dropna=False, sort=True)
pd.DataFrame({
  'count': g.size(), 'sum_v1': g['v1'].sum(min_count=1), 'mean_v3': g['v3'].mean(),
  'min_v2': g['v2'].min(), 'max_v3': g['v3'].max(), 'var_v3': g['v3'].var(), 'std_v1': g['v1'].std(),
  'first_v1': g['v1'].first(), 'last_v3': g['v3'].last(), 'nunique_v2': g['v2'].nunique(),
  'median_v3': g['v3'].median(), 'q0.9_v3': g['v3'].quantile(0.9), 'count_v3': g['v3'].count(),
}).to_csv(sys.argv[2], float_format='%.17g')
)";
constexpr const char* kAggregations =
    "count(),sum(v1),mean(v3),min(v2),max(v3),var(v3),std(v1),first(v1),last(v3),nunique(v2),median(v3),"
    "quantile(v3,0.9),count(v3)";

std::string cell_text(const Column& c, std::size_t i) {
  if (!c.present(i)) return "";
  if (c.type == ColumnType::str) return std::string(c.string(i));
  return visit_numeric(c.type, [&](auto t) { return fmt::format("{}", c.numbers<decltype(t)>()[i]); });
}

void write_table(const Table& t, const std::string& path) {
  std::ofstream out(path);
  for (std::size_t c = 0; c < t.num_columns(); ++c) out << (c ? "," : "") << t.column(c).name;
  out << '\n';
  for (std::size_t i = 0; i < t.rows(); ++i)
    for (std::size_t c = 0; c < t.num_columns(); ++c)
      out << cell_text(t.column(c), i) << (c + 1 < t.num_columns() ? ',' : '\n');
}

std::vector<std::vector<std::string>> read_rows(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> row;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) row.push_back(cell);
    if (!line.empty() && line.back() == ',') row.emplace_back();
    rows.push_back(row);
  }
  return rows;
}

// Equal as text, or as numbers to 1e-9 relative (pandas prints integers of a column with
// missing values as floats).
bool same(const std::string& ours, const std::string& theirs) {
  if (ours == theirs) return true;
  if (ours.empty() || theirs.empty()) return false;
  char* end = nullptr;
  const double x = std::strtod(ours.c_str(), &end), y = std::strtod(theirs.c_str(), nullptr);
  if (*end != '\0') return false;
  return std::fabs(x - y) <= 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)});
}

}  // namespace

TEST(GroupByPandas, SameAnswersAsPandasOnGeneratedData) {
  if (std::system("/usr/bin/python3 -c 'import pandas' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no pandas";
  TempDir dir;
  const Table t = generate_groupby_table({.rows = 30000, .k = 10, .nas_percent = 5, .seed = 3});
  write_table(t, dir.file("data.csv"));
  std::ofstream(dir.file("g.py")) << kScript;
  for (const std::vector<std::string>& by :
       {std::vector<std::string>{"id1", "id4"}, {"id3"}, {"id6"}, {"id2", "id5", "id1"}}) {
    const std::string keys = fmt::format("{}", fmt::join(by, ","));
    const std::string cmd = fmt::format("/usr/bin/python3 {} {} {} {}", dir.file("g.py"), dir.file("data.csv"),
                                        dir.file("pandas.csv"), keys);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const auto want = read_rows(dir.file("pandas.csv"));
    const Table got = groupby(t, {by, parse_aggregations(kAggregations)}, {Device::cpu, 2}).table;
    ASSERT_EQ(got.rows(), want.size()) << keys;
    for (std::size_t i = 0; i < want.size(); ++i)
      for (std::size_t c = 0; c < got.num_columns(); ++c)
        ASSERT_TRUE(same(cell_text(got.column(c), i), want[i].at(c)))
            << keys << " row " << i << " column " << got.column(c).name << ": " << cell_text(got.column(c), i)
            << " vs pandas " << want[i][c];
  }
}
