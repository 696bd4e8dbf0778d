// dist::sort and dist::sort_pairs equal the single-process sort of every rank's data, in slices
// balanced to one element, on 1 to 4 ranks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>
#include "dist_helpers.hpp"

#include "tandem/core/error.hpp"

namespace tandem::dist::test {
namespace {

enum class Shape { uniform, all_equal, one_rank_all, empty_ranks, few_distinct, sorted, reverse };

template <class K>
std::vector<K> make_keys(Shape shape, std::size_t n, int rank, int size) {
  std::mt19937_64 rng(1234 + std::uint64_t(rank) * 7919);
  std::vector<K> v;
  auto random_key = [&] {
    if constexpr (std::is_floating_point_v<K>) return K(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
    else return K(rng());
  };
  switch (shape) {
    case Shape::uniform:
      v.resize(n + std::size_t(rank) * 37);
      for (auto& k : v) k = random_key();
      break;
    case Shape::all_equal: v.assign(n, K(7)); break;
    case Shape::one_rank_all:
      if (rank == size - 1) {
        v.resize(n * 3);
        for (auto& k : v) k = random_key();
      }
      break;
    case Shape::empty_ranks:
      if (rank % 2 == 0) {
        v.resize(n);
        for (auto& k : v) k = random_key();
      }
      break;
    case Shape::few_distinct:
      v.resize(n);
      for (auto& k : v) k = K(rng() % 3);
      break;
    case Shape::sorted:
      v.resize(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = K(std::size_t(rank) * n + i);
      break;
    case Shape::reverse:
      v.resize(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = K((size - rank) * n - i);
      break;
  }
  return v;
}

template <class K>
void check_sort(std::vector<K> keys, bool descending, const Context& ctx = context()) {
  const std::vector<K> all = sorted_whole(keys, descending);
  SortOptions opts = cpu_sort_options(descending);
  const DistReport r = dist::sort(ctx, keys, opts);
  const auto [begin, length] = even_slice(all.size(), ctx.rank(), ctx.size());
  ASSERT_EQ(keys.size(), length);
  EXPECT_TRUE(same_bits(
      keys, std::vector<K>(all.begin() + std::ptrdiff_t(begin), all.begin() + std::ptrdiff_t(begin + length))));
  EXPECT_EQ(r.count_out, length);
}

template <class K>
class DistSort : public ::testing::Test {};
using KeyTypes = ::testing::Types<std::uint32_t, std::int32_t, std::uint64_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(DistSort, KeyTypes);

TYPED_TEST(DistSort, EveryShapeBothDirections) {
  const Context& ctx = context();
  for (Shape shape : {Shape::uniform, Shape::all_equal, Shape::one_rank_all, Shape::empty_ranks, Shape::few_distinct,
                      Shape::sorted, Shape::reverse})
    for (bool descending : {false, true}) {
      SCOPED_TRACE(testing::Message() << "shape " << int(shape) << (descending ? " descending" : ""));
      check_sort(make_keys<TypeParam>(shape, 5003, ctx.rank(), ctx.size()), descending);
    }
}

TYPED_TEST(DistSort, EmptyEverywhereAndOneElement) {
  const Context& ctx = context();
  check_sort(std::vector<TypeParam>{}, false);
  check_sort(ctx.rank() == 0 ? std::vector<TypeParam>{TypeParam(5)} : std::vector<TypeParam>{}, false);
}

TEST(DistSortFloats, NanAndSignedZeroKeepTheKeyOrder) {
  const Context& ctx = context();
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> keys{-0.0, 0.0, nan, -nan, inf, -inf, 1.5, -0.0, double(ctx.rank())};
  check_sort(keys, false);
  check_sort(keys, true);
}

TEST(DistSortPairs, StableAcrossRanks) {
  Context& ctx = context();
  for (bool descending : {false, true}) {
    std::vector<std::uint32_t> keys =
        make_keys<std::uint32_t>(Shape::few_distinct, 3001 + 11 * std::size_t(ctx.rank()), ctx.rank(), ctx.size());
    // A value names its origin: (rank, position), so stability is visible.
    std::vector<std::uint64_t> values(keys.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = (std::uint64_t(ctx.rank()) << 32) | i;
    std::vector<std::uint32_t> all_keys = gather_all(keys, MPI_COMM_WORLD);
    std::vector<std::uint64_t> all_values = gather_all(values, MPI_COMM_WORLD);
    SortOptions opts;
    opts.descending = descending;
    opts.device = Device::cpu;
    tandem::sort_pairs(std::span(all_keys), std::span(all_values), opts);
    dist::sort_pairs(ctx, keys, values, opts);
    const auto [begin, length] = even_slice(all_keys.size(), ctx.rank(), ctx.size());
    ASSERT_EQ(keys.size(), length);
    ASSERT_EQ(values.size(), length);
    for (std::size_t i = 0; i < length; ++i) {
      ASSERT_EQ(keys[i], all_keys[begin + i]) << i;
      ASSERT_EQ(values[i], all_values[begin + i]) << i;
    }
  }
}

// The receive buffers the context keeps between operations: calls in a row, of other sizes and
// types, each right, with no more kept than the bound (none, a few pages, the default).
TEST(DistSort, CallsInARowReuseTheKeptReceiveBuffersWithinTheirBound) {
  for (std::uint64_t keep : {std::uint64_t{0}, std::uint64_t{3} << 20, ContextOptions{}.keep_receive_bytes}) {
    SCOPED_TRACE(testing::Message() << "keep " << keep);
    ContextOptions options;
    options.keep_receive_bytes = keep;
    const Context ctx(MPI_COMM_WORLD, options);
    const int r = ctx.rank(), p = ctx.size();
    check_sort(make_keys<std::uint32_t>(Shape::uniform, 200000, r, p), false, ctx);
    EXPECT_LE(ctx.kept_buffer_bytes(), keep);
    if (p > 1 && keep >= (std::uint64_t{3} << 20)) {
      EXPECT_GT(ctx.kept_buffer_bytes(), 0u);
    }
    check_sort(make_keys<double>(Shape::uniform, 5003, r, p), true, ctx);            // smaller: a kept buffer does
    check_sort(make_keys<std::uint64_t>(Shape::reverse, 700000, r, p), false, ctx);  // larger: a fresh one
    check_sort(make_keys<std::int32_t>(Shape::few_distinct, 300000, r, p), false, ctx);
    EXPECT_LE(ctx.kept_buffer_bytes(), keep);
    // Pairs take two buffers at once: keys and values must not share one.
    std::vector<std::uint32_t> keys = make_keys<std::uint32_t>(Shape::few_distinct, 150000, r, p);
    std::vector<std::uint64_t> values(keys.size());
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = (std::uint64_t(r) << 32) | i;
    std::vector<std::uint32_t> all_keys = gather_all(keys, MPI_COMM_WORLD);
    std::vector<std::uint64_t> all_values = gather_all(values, MPI_COMM_WORLD);
    tandem::sort_pairs(std::span(all_keys), std::span(all_values), cpu_sort_options(false));
    dist::sort_pairs(ctx, keys, values, cpu_sort_options(false));
    const auto [begin, length] = even_slice(all_keys.size(), r, p);
    ASSERT_EQ(values.size(), length);
    EXPECT_TRUE(std::equal(keys.begin(), keys.end(), all_keys.begin() + std::ptrdiff_t(begin)));
    EXPECT_TRUE(std::equal(values.begin(), values.end(), all_values.begin() + std::ptrdiff_t(begin)));
    EXPECT_LE(ctx.kept_buffer_bytes(), keep);
    ctx.release_buffers();
    EXPECT_EQ(ctx.kept_buffer_bytes(), 0u);
  }
}

TEST(DistSortPairs, MismatchedLengthsOnOneRankFailEveryRank) {
  Context& ctx = context();
  std::vector<std::uint32_t> keys(10, 1);
  std::vector<std::uint32_t> values(ctx.rank() == ctx.size() - 1 ? 9 : 10, 2);
  try {
    dist::sort_pairs(ctx, keys, values);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(ctx.size() - 1) + ": "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("9 values"), std::string::npos) << e.what();
  }
}

TEST(DistContext, AgreeRaisesTheLowestFailingRanksErrorOfTheSameKind) {
  const Context& ctx = context();
  EXPECT_NO_THROW(ctx.run_agreed([] {}));
  try {
    ctx.run_agreed([&] {
      if (ctx.rank() >= ctx.size() / 2) throw InputError("shard.npy: truncated at byte " + std::to_string(ctx.rank()));
    });
    FAIL() << "no error";
  } catch (const InputError& e) {
    const int first = ctx.size() / 2;
    EXPECT_EQ(std::string(e.what()),
              "rank " + std::to_string(first) + ": shard.npy: truncated at byte " + std::to_string(first));
  }
}

TEST(DistContext, DescribesItselfAndExpandsRankPaths) {
  const Context& ctx = context();
  EXPECT_NE(ctx.describe().find(std::to_string(ctx.size()) + " rank"), std::string::npos) << ctx.describe();
  EXPECT_EQ(expand_rank_path("keys-{rank}-of-{size}.npy", 2, 4), "keys-2-of-4.npy");
  EXPECT_EQ(expand_rank_path("plain.npy", 2, 4), "plain.npy");
}

TEST(DistReport, EveryRankFiguresInTheDetails) {
  Context& ctx = context();
  std::vector<std::uint64_t> keys(1000 + std::size_t(ctx.rank()));
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i * 2654435761u;
  const DistReport r = dist::sort(ctx, keys);
  const auto& ranks = r.report.details().at("ranks");
  ASSERT_EQ(int(ranks.size()), ctx.size());
  std::uint64_t in = 0, sent = 0, received = 0;
  for (const auto& x : ranks) {
    in += x.at("count_in").get<std::uint64_t>();
    sent += x.at("bytes_sent").get<std::uint64_t>();
    received += x.at("bytes_received").get<std::uint64_t>();
    EXPECT_TRUE(x.at("stages").contains("local sort"));
    if (ctx.size() > 1) {
      EXPECT_TRUE(x.at("stages").contains("exchange data"));
    }
  }
  EXPECT_EQ(in, std::uint64_t(1000 * ctx.size() + ctx.size() * (ctx.size() - 1) / 2));
  EXPECT_EQ(sent, received);
}

}  // namespace
}  // namespace tandem::dist::test
