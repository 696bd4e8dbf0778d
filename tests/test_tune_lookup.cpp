// Reading the tuning cache: an entry of the wrong shape counts as missing (dropped, warned about in
// the Report, measured again and replaced in the file), and one cache is safe to share between
// host threads.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/tune.hpp"
#include "test_util.hpp"

using namespace tandem;
using nlohmann::json;

namespace {

// A reader as the library writes them: a positive thread count and a mapping name.
struct Entry {
  int threads;
  std::string mapping;
};
Entry parse_entry(const json& j) {
  return Entry{positive_field<int>(j, "threads"), j.at("mapping").get<std::string>()};
}

// Every way an entry can be malformed: not an object, a field missing, of the wrong JSON type, or
// out of range for its type (negative, zero, fractional, too large for an int).
std::vector<json> malformed_entries() {
  return {json(42),
          json("threads=8"),
          json::array({8, "x"}),
          json(nullptr),
          json(true),
          json::object(),
          json{{"threads", 8}},
          json{{"mapping", "compact"}},
          json{{"threads", "8"}, {"mapping", "compact"}},
          json{{"threads", nullptr}, {"mapping", "compact"}},
          json{{"threads", json::array({8})}, {"mapping", "compact"}},
          json{{"threads", json::object()}, {"mapping", "compact"}},
          json{{"threads", 8}, {"mapping", 3}},
          json{{"threads", 8}, {"mapping", false}},
          json{{"threads", -3}, {"mapping", "compact"}},
          json{{"threads", 0}, {"mapping", "compact"}},
          json{{"threads", 2.5}, {"mapping", "compact"}},
          json{{"threads", 1e300}, {"mapping", "compact"}},
          json{{"threads", 4294967296ull}, {"mapping", "compact"}}};
}

bool mentions(const Report& r, const std::string& what) {
  for (const auto& n : r.notes)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(TuningCacheLookup, GoodEntryIsRead) {
  TempDir dir;
  TuningCache c(dir.file("tuning.json"));
  Report r;
  EXPECT_FALSE(c.lookup("op", "dev", "cls", parse_entry, &r).has_value());
  c.put("op", "dev", "cls", {{"threads", 8}, {"mapping", "compact"}});
  const auto e = c.lookup("op", "dev", "cls", parse_entry, &r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->threads, 8);
  EXPECT_EQ(e->mapping, "compact");
  EXPECT_TRUE(r.notes.empty());
}

TEST(TuningCacheLookup, EveryMalformedEntryCountsAsMissingAndIsReplaced) {
  for (const json& bad : malformed_entries()) {
    SCOPED_TRACE(bad.dump());
    TempDir dir;
    const std::string path = dir.file("tuning.json");
    {
      TuningCache writer(path);  // another process (or an older tandem) left this entry
      writer.put("op", "dev", "cls", bad);
      writer.put("op", "dev", "other", {{"threads", 2}, {"mapping", "scatter"}});
    }
    TuningCache c(path);
    Report r;
    EXPECT_FALSE(c.lookup("op", "dev", "cls", parse_entry, &r).has_value());
    EXPECT_TRUE(mentions(r, "op|dev|cls is malformed")) << (r.notes.empty() ? "no note" : r.notes[0]);
    EXPECT_EQ(c.warnings().size(), 1u);
    EXPECT_FALSE(c.get("op", "dev", "cls").has_value()) << "dropped: measured again";
    // The caller measures and stores; the file holds the new entry and keeps the others.
    c.put("op", "dev", "cls", {{"threads", 4}, {"mapping", "compact"}});
    TuningCache again(path);
    Report r2;
    const auto e = again.lookup("op", "dev", "cls", parse_entry, &r2);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->threads, 4);
    EXPECT_EQ(again.lookup("op", "dev", "other", parse_entry)->mapping, "scatter");
    EXPECT_TRUE(r2.notes.empty());
    EXPECT_TRUE(again.warnings().empty());
  }
}

TEST(TuningCacheLookup, MalformedEntryLeavesTheFileOnTheNextWrite) {
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  TuningCache(path).put("op", "dev", "cls", json("garbage"));
  TuningCache c(path);
  EXPECT_FALSE(c.lookup("op", "dev", "cls", parse_entry).has_value());
  // A write of another entry (the caller failed to measure this one) still drops it from the file.
  c.put("op", "dev", "else", {{"threads", 1}, {"mapping", "none"}});
  TuningCache again(path);
  EXPECT_FALSE(again.get("op", "dev", "cls").has_value());
  EXPECT_TRUE(again.get("op", "dev", "else").has_value());
}

TEST(TuningCacheLookup, CorruptFileWarningGoesIntoTheFirstReport) {
  TempDir dir;
  const std::string path = dir.file("tuning.json");
  std::ofstream(path) << "{ not json";
  TuningCache c(path);
  Report first, second;
  EXPECT_FALSE(c.lookup("op", "dev", "cls", parse_entry, &first).has_value());
  EXPECT_TRUE(mentions(first, "corrupt"));
  EXPECT_FALSE(c.lookup("op", "dev", "cls", parse_entry, &second).has_value());
  EXPECT_TRUE(second.notes.empty()) << "each warning is reported once";
}

TEST(TuningCacheLookup, PositiveFieldRejectsWhatItsTypeCannotHold) {
  EXPECT_EQ(positive_field<int>(json{{"x", 7}}, "x"), 7);
  EXPECT_EQ(positive_field<std::size_t>(json{{"x", 1ull << 40}}, "x"), std::size_t{1} << 40);
  EXPECT_DOUBLE_EQ(positive_field(json{{"x", 0.25}}, "x"), 0.25);
  EXPECT_DOUBLE_EQ(positive_field(json{{"x", 3}}, "x"), 3.0);
  EXPECT_THROW(positive_field<int>(json{{"x", 1ull << 40}}, "x"), std::out_of_range);
  EXPECT_THROW(positive_field<int>(json{{"x", 1.5}}, "x"), std::out_of_range);
  EXPECT_THROW(positive_field<int>(json{{"x", -1}}, "x"), std::out_of_range);
  EXPECT_THROW(positive_field(json{{"x", 0.0}}, "x"), std::out_of_range);
  EXPECT_THROW(positive_field(json{{"x", "1"}}, "x"), std::out_of_range);
  EXPECT_THROW(positive_field(json{{"y", 1}}, "x"), json::exception);
  EXPECT_THROW(positive_field(json(5), "x"), json::exception);
}

TEST(TuningCacheLookup, SharedBetweenHostThreads) {
  TempDir dir;
  TuningCache c(dir.file("tuning.json"));
  std::vector<std::thread> ts;
  std::vector<int> wrong(6, 0);
  for (int t = 0; t < 6; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const std::string cls = std::to_string(i % 5);
        if ((i + t) % 3 == 0) c.put("op", "dev" + std::to_string(t), cls, {{"threads", i + 1}, {"mapping", "m"}});
        if (i % 7 == 0) c.put("op", "shared", cls, json("bad"));
        Report r;
        if (auto e = c.lookup("op", "dev" + std::to_string(t), cls, parse_entry, &r); e && e->threads < 1) ++wrong[t];
        (void)c.lookup("op", "shared", cls, parse_entry, &r);
        (void)c.warnings();
      }
    });
  for (auto& t : ts) t.join();
  for (int w : wrong) EXPECT_EQ(w, 0);
  TuningCache again(dir.file("tuning.json"));
  for (int t = 0; t < 6; ++t) EXPECT_TRUE(again.lookup("op", "dev" + std::to_string(t), "0", parse_entry).has_value());
}
