// Which GPU engine groups a device table (src/groupby/engine_choice.hpp): the hash engine exactly
// where its keys, aggregations and types allow, with the reason in words either way.
#include <gtest/gtest.h>

#include <map>

#include "groupby/engine_choice.hpp"

namespace {

using namespace tandem;

Table schema() {
  Table t;
  t.add(make_column<std::int32_t>("k32", {}));
  t.add(make_column<std::uint64_t>("k64", {}));
  t.add(make_column<double>("v", {}));
  t.add(make_column<std::int64_t>("w", {}));
  t.add(make_column<float>("f", {}));
  t.add(make_string_column("s", std::vector<std::string>{}));
  return t;
}

groupby_engine::HashFit fit(std::vector<std::string> by, const std::string& aggs,
                            std::map<std::string, std::size_t> missing = {}, std::size_t rows = 1000) {
  return groupby_engine::hash_engine_fit(
      schema(), rows, GroupBySpec{std::move(by), aggs.empty() ? std::vector<Aggregation>{} : parse_aggregations(aggs)},
      [&](const std::string& name) { return missing[name]; });
}

TEST(GroupByEngineChoice, HashEngineTakesOneIntegerKeyAndDecomposableAggregationsOfOneColumn) {
  auto f = fit({"k32"}, "count()");
  EXPECT_TRUE(f.fits) << f.why;
  EXPECT_EQ(f.value_column, "");
  f = fit({"k64"}, "sum(v),min(v),max(v),mean(v),count(v),count()");
  EXPECT_TRUE(f.fits) << f.why;
  EXPECT_EQ(f.value_column, "v");
  f = fit({"k32"}, "sum(w),count(k32)");
  EXPECT_TRUE(f.fits) << f.why;
  EXPECT_EQ(f.value_column, "w");
  f = fit({"k64"}, "sum(k64)");  // the key is its own value column
  EXPECT_FALSE(f.fits) << "u64 values are summed as u64, which the hash engine does not";
  EXPECT_NE(f.why.find("u64"), std::string::npos) << f.why;
  f = fit({"k32"}, "");
  EXPECT_TRUE(f.fits) << "distinct keys only";
}

TEST(GroupByEngineChoice, TableEngineForEverythingElseWithTheReason) {
  const std::vector<std::pair<groupby_engine::HashFit, std::string>> cases = {
      {fit({"k32", "k64"}, "count()"), "2 key columns"},
      {fit({"s"}, "count()"), "key 's' is str"},
      {fit({"v"}, "count()"), "key 'v' is f64"},
      {fit({"k32"}, "median(v)"), "median"},
      {fit({"k32"}, "var(v)"), "var"},
      {fit({"k32"}, "sum(v),sum(w)"), "'v' and 'w'"},
      {fit({"k32"}, "sum(f)"), "'f' is f32"},
      {fit({"k32"}, "min(s)"), "'s' is str"},
      {fit({"k32"}, "sum(v)", {{"k32", 1}}), "key 'k32' has missing values"},
      {fit({"k32"}, "sum(v)", {{"v", 3}}), "'v' has missing values"},
      {fit({"k32"}, "count()", {}, std::size_t{1} << 32), "2^32 rows"},
  };
  for (const auto& [f, why] : cases) {
    EXPECT_FALSE(f.fits) << why;
    EXPECT_NE(f.why.find(why), std::string::npos) << "got: " << f.why << "; expected it to say: " << why;
  }
}

TEST(GroupByEngineChoice, AutoTakesTheHashEngineForCountsOnly) {
  EXPECT_EQ(groupby_engine::auto_declines_hash(fit({"k32"}, "count()")), "");
  EXPECT_EQ(groupby_engine::auto_declines_hash(fit({"k64"}, "count(k64),count()")), "");
  const std::string values = groupby_engine::auto_declines_hash(fit({"k32"}, "sum(v),count()"));
  EXPECT_NE(values.find("counts only"), std::string::npos) << values;
  const std::string no = groupby_engine::auto_declines_hash(fit({"s"}, "count()"));
  EXPECT_NE(no.find("key 's' is str"), std::string::npos) << no;
}

}  // namespace
