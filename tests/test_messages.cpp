// What the library tells its caller: notices travel in the Report (the library never prints), and
// error messages name the option's field, not a command-line flag.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/report.hpp"
#include "tandem/groupby.hpp"
#include "tandem/mapreduce.hpp"
#include "tandem/sort.hpp"
#include "tandem/topk.hpp"

using namespace tandem;

namespace {

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Report, NoticeIsANoteTooAndReachesJson) {
  Report r;
  r.note("a choice");
  r.notice("GPU out of memory; ran on the CPU");
  EXPECT_EQ(r.notes.size(), 2u);
  ASSERT_EQ(r.notices.size(), 1u);
  EXPECT_EQ(r.notices[0], "GPU out of memory; ran on the CPU");
  EXPECT_NE(r.explain().find("GPU out of memory"), std::string::npos);
  EXPECT_EQ(r.to_json()["notices"].size(), 1u);
}

TEST(Report, CopiesOwnTheirDetails) {
  Report a;
  EXPECT_TRUE(std::as_const(a).details().empty());  // nothing stored yet
  a.details()["path"] = "cpu-radix";
  Report b = a;
  b.details()["path"] = "bitonic";
  EXPECT_EQ(a.details().value("path", ""), "cpu-radix");
  EXPECT_EQ(b.details().value("path", ""), "bitonic");
  Report c = std::move(b);
  EXPECT_EQ(c.details().value("path", ""), "bitonic");
  a = c;
  EXPECT_EQ(a.to_json()["details"]["path"], "bitonic");
}

TEST(LibraryErrors, NameFieldsNotFlags) {
  const std::vector<std::string> messages = {
      message_of([] { parse_aggregations("sum(value),median"); }),
      message_of([] { parse_aggregations(""); }),
      message_of([] {
        const Table t(std::vector<Column>{make_column<std::uint32_t>("key", {1})});
        groupby(t, {{"key"}, parse_aggregations("sum(value)")});
      }),
      message_of([] {
        const Table t(std::vector<Column>{make_column<std::uint32_t>("key", {1}),
                                          make_string_column("value", std::vector<std::string>{"x"})});
        groupby(t, {{"key"}, parse_aggregations("sum(value)")});
      }),
      message_of([] {
        topk::GenOptions o;
        o.lists = 65;
        topk::generate(o);
      }),
  };
  for (const auto& m : messages) {
    EXPECT_NE(m, "(no error)");
    EXPECT_EQ(m.find("--"), std::string::npos) << m;
  }
  EXPECT_NE(messages[2].find("'value'"), std::string::npos) << messages[2];
  EXPECT_NE(messages[3].find("'value'"), std::string::npos) << messages[3];
  EXPECT_NE(messages[4].find("lists = 65"), std::string::npos) << messages[4];
}

TEST(LibraryErrors, DeviceGpuWithoutGpuNamesTheField) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is present";
  mapreduce::WordCountOptions wc;
  wc.engine.device = Device::gpu;
  const std::string m = message_of([&] { mapreduce::wordcount("a b", wc); });
  EXPECT_NE(m.find("device = gpu"), std::string::npos) << m;
  std::vector<std::uint32_t> keys{2, 1};
  SortOptions so;
  so.device = Device::gpu;
  const std::string s = message_of([&] { sort(std::span<std::uint32_t>(keys), so); });
  EXPECT_NE(s.find("device = gpu"), std::string::npos) << s;
}
