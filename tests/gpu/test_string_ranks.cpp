// Strings ranked on the GPU against std::sort of the distinct strings: empty strings, missing
// rows, NUL bytes (where equal padded words do not mean equal strings), long shared prefixes,
// skew, one row, no rows, every row missing, and more distinct strings than the first hash table
// takes (the retry with a full-size table).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "table/gpu/string_ranks.hpp"
#include "tandem/core/device.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

// rows[i] nullopt: a missing row.
void expect_ranks(const std::vector<std::optional<std::string>>& rows, const std::string& what) {
  const std::size_t n = rows.size();
  std::vector<std::uint64_t> offsets(n + 1, 0);
  std::string bytes;
  std::vector<std::uint8_t> valid((n + 7) / 8, 0);
  bool any_missing = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (rows[i]) {
      bytes += *rows[i];
      valid[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
    } else {
      any_missing = true;
    }
    offsets[i + 1] = bytes.size();
  }
  std::map<std::string, std::uint32_t> order;
  for (const auto& r : rows)
    if (r) order.emplace(*r, 0);
  std::uint32_t k = 0;
  for (auto& [s, rank] : order) rank = k++;

  gpu::DeviceBuffer<std::uint64_t> d_offsets(n + 1);
  gpu::DeviceBuffer<char> d_bytes(bytes.size());
  gpu::DeviceBuffer<std::uint8_t> d_valid(valid.size());
  gpu::DeviceBuffer<std::uint32_t> codes(n);
  codes.poison();
  TANDEM_CUDA(cudaMemcpy(d_offsets.data(), offsets.data(), d_offsets.bytes(), cudaMemcpyHostToDevice));
  if (!bytes.empty()) TANDEM_CUDA(cudaMemcpy(d_bytes.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  if (n) TANDEM_CUDA(cudaMemcpy(d_valid.data(), valid.data(), valid.size(), cudaMemcpyHostToDevice));
  gpu::Stream stream;
  const auto sorted = table_gpu::rank_strings(
      {d_offsets.data(), d_bytes.data(), any_missing ? d_valid.data() : nullptr, n}, codes.data(), stream);
  ASSERT_TRUE(sorted.has_value()) << what;
  ASSERT_EQ(sorted->size(), order.size()) << what;
  std::size_t j = 0;
  for (const auto& [s, rank] : order) ASSERT_EQ((*sorted)[j++], s) << what << ": sorted string " << rank;
  std::vector<std::uint32_t> got(n);
  if (n) TANDEM_CUDA(cudaMemcpy(got.data(), codes.data(), n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t want = rows[i] ? order.at(*rows[i]) : static_cast<std::uint32_t>(order.size());
    ASSERT_EQ(got[i], want) << what << ": row " << i;
  }
}

std::string random_string(std::mt19937_64& rng, std::size_t max_len, const std::string& alphabet) {
  std::string s(rng() % (max_len + 1), ' ');
  for (auto& c : s) c = alphabet[rng() % alphabet.size()];
  return s;
}

}  // namespace

TEST(GpuStringRanks, SmallAndEdgeColumns) {
  TANDEM_REQUIRE_GPU();
  using R = std::vector<std::optional<std::string>>;
  expect_ranks(R{}, "no rows");
  expect_ranks(R{"only"}, "one row");
  expect_ranks(R{std::nullopt}, "one missing row");
  expect_ranks(R{std::nullopt, std::nullopt, std::nullopt}, "every row missing");
  expect_ranks(R{"", "", std::nullopt, ""}, "empty strings and a missing row");
  expect_ranks(R{"b", "a", "", "ab", "a", "b", "ba"}, "prefixes");
  // NUL bytes: "a" < "a\0" < "a\0\0" < "a\0b" < "a\1", and "" < "\0".
  using namespace std::string_literals;
  expect_ranks(R{"a\0"s, "a"s, "a\0\0"s, "\0"s, ""s, "a\0b"s, "a\1"s, "a\0"s}, "NUL bytes");
  expect_ranks(R{"\xff\xfe", "\x7f", "\x80", "abc"}, "bytes above 0x7f sort as unsigned");
}

TEST(GpuStringRanks, RandomColumnsMatchTheSortedDistinctStrings) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(5);
  for (int round = 0; round < 12; ++round) {
    const std::size_t n = 1 + rng() % 20000;
    const std::size_t max_len = round % 3 == 0 ? 3 : round % 3 == 1 ? 20 : 70;
    const std::string prefix = round % 4 == 0 ? std::string(33, 'p') : "";  // a long shared prefix
    std::vector<std::optional<std::string>> rows(n);
    for (auto& r : rows) {
      if (round % 2 && rng() % 10 == 0) continue;  // missing
      if (rng() % 3 == 0) r = "hot";               // skew
      else r = prefix + random_string(rng, max_len, round % 5 ? "abcxyz" : "ab");
    }
    expect_ranks(rows, "round " + std::to_string(round));
  }
}

TEST(GpuStringRanks, MoreDistinctStringsThanTheFirstTableTakes) {
  TANDEM_REQUIRE_GPU();
  if (std::getenv("TANDEM_SANITIZER")) GTEST_SKIP() << "large; skipped under the sanitizer";
  std::mt19937_64 rng(9);
  const std::size_t n = (std::size_t{3} << 20) / 2;  // 1.5 million rows, nearly all distinct
  std::vector<std::optional<std::string>> rows(n);
  for (std::size_t i = 0; i < n; ++i) rows[i] = "id" + std::to_string(rng() % (std::uint64_t{1} << 40));
  expect_ranks(rows, "1.5 million distinct");
}
