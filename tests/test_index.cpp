// tandem::index on the CPU: the add-and-carry step against div/mod, the N-D strided
// walker, magic division at the edges, packing (exhaustive over all blocks up to 1024 threads),
// packed tables, the warp generator, the cycle model, the history cache, the reference gather.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "tandem/index.hpp"

using namespace tandem;
using namespace tandem::index;

namespace {
const std::vector<Dims3> kShapes = {{1, 1, 1},   {5, 70, 10}, {3, 1, 7},   {1, 9, 1},  {7, 7, 7},
                                    {32, 64, 1}, {100, 2, 2}, {33, 31, 1}, {1, 1, 13}, {17, 1, 3}};

std::vector<std::uint64_t> steps_for(Dims3 d) {
  const std::uint64_t t = d.count(), p = std::uint64_t(d.x) * d.y;
  std::vector<std::uint64_t> s = {1, 2, 3, 37, d.x, d.x + 1ull, p, p + 1, t, t + 1, 2 * t + 3};
  if (d.x > 1) s.push_back(d.x - 1);
  if (p > 1) s.push_back(p - 1);
  if (t > 1) s.push_back(t - 1);
  return s;
}
}  // namespace

TEST(IndexCarry, WalkMatchesDivModForEveryStep) {
  for (const Dims3 d : kShapes)
    for (std::uint64_t c : steps_for(d))
      for (std::uint64_t start : {std::uint64_t{0}, std::uint64_t{1}, d.count() / 2, d.count() - 1}) {
        std::uint64_t expect_n = start, seen = 0;
        const std::uint64_t count = walk(d, c, start, [&](std::uint64_t n, Index3<std::uint64_t> i) {
          ASSERT_EQ(n, expect_n);
          ASSERT_EQ(i, index_of<std::uint64_t>(n, d)) << to_string(d) << " c=" << c << " n=" << n;
          ASSERT_LT(i.z, d.z);
          expect_n += c;
          ++seen;
        });
        const std::uint64_t want = start < d.count() ? (d.count() - start + c - 1) / c : 0;
        EXPECT_EQ(count, want) << to_string(d) << " c=" << c << " start=" << start;
        EXPECT_EQ(seen, want);
      }
}

TEST(IndexCarry, StepsBeyondTheDomainGrowZ) {
  // Semantics: the domain extends without bound along z; advance stays exact past dz.
  const Dims3 d{5, 70, 10};
  for (std::uint64_t c : {d.count(), d.count() + 1, 3 * d.count() + 17, std::uint64_t{1} << 40}) {
    const auto s = make_step<std::uint64_t>(c, d);
    EXPECT_EQ(s.idx, index_of<std::uint64_t>(c, d));
    EXPECT_GE(s.idx.z, d.z);
    Index3<std::uint64_t> i{3, 69, 9};  // the last index of the domain
    std::uint64_t n = flat_of(i, d);
    for (int k = 0; k < 50; ++k) {
      i = advance(i, s.idx, d);
      n += c;
      ASSERT_EQ(i, index_of<std::uint64_t>(n, d)) << "c=" << c << " k=" << k;
      EXPECT_GE(i.z, d.z);
    }
  }
  // A walk with such a step visits exactly its start.
  EXPECT_EQ(walk(d, d.count(), 4, [](auto, auto) {}), 1u);
}

TEST(IndexCarry, ZeroStepAndZeroDimsRejected) {
  EXPECT_THROW(make_step(0, Dims3{4, 4, 4}), UsageError);
  EXPECT_THROW(walk(Dims3{4, 4, 4}, 0, 0, [](auto, auto) {}), UsageError);
  EXPECT_THROW((make_carry_plan<2>(std::array<std::uint32_t, 2>{3, 4}, std::array<std::int64_t, 2>{1, 3}, 0)),
               UsageError);
  EXPECT_THROW((make_carry_plan<2>(std::array<std::uint32_t, 2>{0, 4}, std::array<std::int64_t, 2>{1, 3}, 1)),
               UsageError);
  EXPECT_THROW(make_dims(0, 3, 3), UsageError);
  EXPECT_THROW(make_dims(3, 3, 0), UsageError);
}

TEST(IndexCarry, RandomStepsAgreeWithDivMod) {
  std::mt19937_64 rng(42);
  for (int k = 0; k < 20000; ++k) {
    const Dims3 d{std::uint32_t(1 + rng() % 1500), std::uint32_t(1 + rng() % 1500), std::uint32_t(1 + rng() % 1500)};
    const std::uint64_t n = rng() >> 20, c = 1 + (rng() >> (20 + rng() % 40));
    const auto got = advance(index_of<std::uint64_t>(n, d), index_of<std::uint64_t>(c, d), d);
    ASSERT_EQ(got, index_of<std::uint64_t>(n + c, d)) << to_string(d) << " n=" << n << " c=" << c;
  }
  // 32-bit arithmetic as kernels use it.
  for (int k = 0; k < 20000; ++k) {
    const Dims3 d{std::uint32_t(1 + rng() % 700), std::uint32_t(1 + rng() % 700), std::uint32_t(1 + rng() % 700)};
    const std::uint32_t total = std::uint32_t(d.count());
    const std::uint32_t n = std::uint32_t(rng() % total), c = std::uint32_t(1 + rng() % total);
    const auto got = advance(index_of<std::uint32_t>(n, d), index_of<std::uint32_t>(c, d), d);
    ASSERT_EQ(got, index_of<std::uint32_t>(n + c, d));
  }
}

TEST(IndexCarryND, OffsetsFollowStridesInNDimensions) {
  // 4-D tensor with arbitrary strides (negative and zero too): offset = sum idx[k] * stride[k].
  const std::array<std::uint32_t, 4> ext{3, 5, 2, 7};
  const std::array<std::int64_t, 4> stride{70, -1, 0, 9};
  const std::uint64_t total = 3 * 5 * 2 * 7;
  for (std::uint64_t c : std::vector<std::uint64_t>{1, 2, 4, 15, 29, 30, total - 1, total, total + 5}) {
    const auto plan = make_carry_plan<4>(ext, stride, c);
    for (std::uint64_t start : std::vector<std::uint64_t>{0, 1, 17}) {
      auto it = CarryIter<4>::at(plan, start);
      std::uint64_t n = start, visited = 0;
      while (it.valid(plan)) {
        std::uint64_t r = n;
        std::int64_t off = 0;
        for (int k = 0; k < 4; ++k) {
          const std::uint64_t digit = k < 3 ? r % ext[k] : r;
          ASSERT_EQ(it.idx[k], digit) << "c=" << c << " n=" << n << " k=" << k;
          off += std::int64_t(digit) * stride[k];
          r /= ext[k];
        }
        ASSERT_EQ(it.off, off);
        it.advance(plan);
        n += c;
        ++visited;
      }
      EXPECT_EQ(visited, (total - start + c - 1) / c);
    }
  }
  // One dimension: offset = n * stride.
  const auto p1 = make_carry_plan<1>(std::array<std::uint32_t, 1>{10}, std::array<std::int64_t, 1>{3}, 4);
  auto it = CarryIter<1>::at(p1, 1);
  std::vector<std::int64_t> offs;
  for (; it.valid(p1); it.advance(p1)) offs.push_back(it.off);
  EXPECT_EQ(offs, (std::vector<std::int64_t>{3, 15, 27}));
}

TEST(IndexMagic, ExactAtEdgesAndRandom) {
  std::vector<std::uint32_t> divisors = {1, 2, 3, 5, 6, 7, 10, 641, 6700417, 0x80000001u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  for (int k = 1; k < 32; ++k) {
    divisors.push_back(std::uint32_t(1) << k);
    divisors.push_back((std::uint32_t(1) << k) - 1 + (k == 1));
    divisors.push_back((std::uint32_t(1) << k) + 1);
  }
  for (std::uint32_t d : divisors) {
    const FastDivmod f = make_divider(d);
    std::vector<std::uint64_t> ns = {0, 1, 2, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF};
    for (std::uint64_t m : std::vector<std::uint64_t>{1, 2, 3, 0xFFFFFFFFull / d, 0xFFFFFFFFull / d - 1})
      for (int delta : {-1, 0, 1}) ns.push_back(m * d + delta);
    for (std::uint64_t n64 : ns) {
      if (n64 > 0xFFFFFFFFull) continue;
      const std::uint32_t n = std::uint32_t(n64);
      std::uint32_t q = 0, r = 0;
      f.divmod(n, q, r);
      ASSERT_EQ(q, n / d) << "n=" << n << " d=" << d;
      ASSERT_EQ(r, n % d) << "n=" << n << " d=" << d;
    }
  }
  std::mt19937_64 rng(7);
  for (int k = 0; k < 200000; ++k) {
    const std::uint32_t d = std::max<std::uint32_t>(1, std::uint32_t(rng() >> (32 + rng() % 32)));
    const std::uint32_t n = std::uint32_t(rng());
    ASSERT_EQ(FastDivmod(d).div(n), n / d) << "n=" << n << " d=" << d;
  }
  EXPECT_THROW(make_divider(0), UsageError);
  EXPECT_THROW(make_divider(1ull << 32), UsageError);
  // Every numerator for a few divisors near the top of the range, sampled densely.
  for (std::uint32_t d : {3u, 7u, 0xFFFFFFFFu, 0x80000001u})
    for (std::uint64_t n = 0xFFFFFFFFull; n > 0xFFFFFFFFull - 4096; --n)
      ASSERT_EQ(FastDivmod(d).div(std::uint32_t(n)), std::uint32_t(n) / d);
}

TEST(IndexMagic, IndexerMatchesDivMod) {
  std::mt19937_64 rng(3);
  for (const Dims3 d : kShapes)
    for (std::uint32_t n = 0; n < std::min<std::uint64_t>(d.count() * 3, 20000); ++n)
      ASSERT_EQ(MagicIndexer(d)(n), index_of<std::uint32_t>(n, d));
  const Dims3 big{65537, 65535, 1};
  for (int k = 0; k < 10000; ++k) {
    const std::uint32_t n = std::uint32_t(rng());
    ASSERT_EQ(MagicIndexer(big)(n), index_of<std::uint32_t>(n, big));
  }
}

TEST(IndexPack, EveryBlockUpTo1024ThreadsFitsSixteenBits) {
  // Exhaustive over all (dx, dy, dz) with dx*dy*dz <= 1024 (CUDA's block limit).
  std::uint32_t max_bits = 0, max_sum = 0, shapes = 0;
  Dims3 widest{};
  for (std::uint32_t x = 1; x <= 1024; ++x)
    for (std::uint32_t y = 1; x * y <= 1024; ++y)
      for (std::uint32_t z = 1; x * y * z <= 1024; ++z) {
        const Dims3 d{x, y, z};
        const PackLayout l = pack_layout(d);
        ++shapes;
        ASSERT_LE(l.bits(), 16u) << to_string(d);
        ASSERT_EQ(l.word_bits, 16u);
        // Widths hold the largest index, and one less bit would not (where the width is > 0).
        ASSERT_GE(std::uint64_t(1) << l.wx, x);
        ASSERT_GE(std::uint64_t(1) << l.wy, y);
        ASSERT_GE(std::uint64_t(1) << l.wz, z);
        if (l.wx) {
          ASSERT_LT(std::uint64_t(1) << (l.wx - 1), x);
        }
        const Index3<std::uint32_t> last{x - 1, y - 1, z - 1}, mid{x / 2, y / 2, z / 2};
        ASSERT_EQ(unpack(pack(last, l), l), last);
        ASSERT_EQ(unpack(pack(mid, l), l), mid);
        ASSERT_LT(pack(last, l), std::uint64_t(1) << 16);
        // The packing bound with mx = highest set bit: mx + my + mz <= ms = 10.
        const std::uint32_t msb_sum = highest_bit(x) + highest_bit(y) + highest_bit(z);
        ASSERT_LE(msb_sum, 10u);
        max_sum = std::max(max_sum, msb_sum);
        if (l.bits() > max_bits) {
          max_bits = l.bits();
          widest = d;
        }
      }
  EXPECT_EQ(max_bits, 12u) << "widest " << to_string(widest);  // ceil-widths: at most log2(1024) + 2
  EXPECT_EQ(max_sum, 10u);
  EXPECT_GT(shapes, 10000u);
  // Highest-bit widths do not hold every index: x = 4 in dx = 5 needs 3 bits, the msb of 5 is 2.
  EXPECT_EQ(highest_bit(5), 2u);
  EXPECT_EQ(bits_for(5), 3u);
}

TEST(IndexPack, LargerDomainsUseWiderWords) {
  EXPECT_EQ(pack_layout({33, 33, 33}).bits(), 18u);  // under 64k threads yet over 16 bits
  EXPECT_EQ(pack_layout({33, 33, 33}).word_bits, 32u);
  EXPECT_EQ(pack_layout({512, 512, 512}).word_bits, 32u);
  EXPECT_EQ(pack_layout({65536, 65536, 1}).bits(), 32u);
  EXPECT_EQ(pack_layout({65536, 65536, 1}).word_bits, 32u);
  const Dims3 odd = make_dims(3, 3, (1u << 28) + 1);  // 2^32 > count, yet 2 + 2 + 29 = 33 bits
  EXPECT_EQ(pack_layout(odd).word_bits, 64u);
  const Index3<std::uint32_t> last{2, 2, 1u << 28};
  EXPECT_EQ(unpack(pack(last, pack_layout(odd)), pack_layout(odd)), last);
  EXPECT_EQ(pack_layout({1, 1, 1}).bits(), 0u);
  EXPECT_EQ(pack(Index3<std::uint32_t>{0, 0, 0}, pack_layout({1, 1, 1})), 0u);
}

TEST(IndexWarp, ThirtyTwoIndicesPerStepMatchDivMod) {
  for (const Dims3 d : kShapes) {
    std::uint64_t produced = 0;
    const std::uint64_t warps =
        generate_warps(d, [&](std::uint64_t w, const Index3<std::uint32_t>* lanes, std::uint32_t count) {
          const std::uint64_t want = std::min<std::uint64_t>(kWarp, d.count() - w * kWarp);
          ASSERT_EQ(count, want);
          for (std::uint32_t l = 0; l < count; ++l)
            ASSERT_EQ(lanes[l], index_of<std::uint32_t>(std::uint32_t(w * kWarp + l), d));
          produced += count;
        });
    EXPECT_EQ(produced, d.count());
    EXPECT_EQ(warps, (d.count() + 31) / 32);
  }
}

TEST(IndexTable, PackedTablesUnpackToDivMod) {
  for (const Dims3 d : {Dims3{5, 70, 10}, Dims3{1, 1, 1}, Dims3{33, 33, 33}, Dims3{32, 64, 1}}) {
    const PackedTable t = build_packed_table(d);
    EXPECT_EQ(t.memory_bytes(), d.count() * t.layout.word_bits / 8);
    for (std::uint64_t n = 0; n < d.count(); ++n) ASSERT_EQ(t.index(n), index_of<std::uint32_t>(std::uint32_t(n), d));
  }
  EXPECT_EQ(build_packed_table({5, 70, 10}).layout.word_bits, 16u);
  EXPECT_EQ(build_packed_table({33, 33, 33}).layout.word_bits, 32u);
}

TEST(IndexCycles, WarpPerCycleHasOneCycleLatency) {
  // 5 full warps, 4 instructions on 4 cores (the pipeline diagram).
  const auto w = simulate_pipeline(160, 4, GenMode::warp_per_cycle);
  EXPECT_EQ(w.warps, 5u);
  EXPECT_EQ(w.first_start, 1u);
  EXPECT_EQ(w.total_cycles, 5u + 4u);
  EXPECT_EQ(w.all_indices_ready, 5u);
  EXPECT_EQ(w.index_units, 32u);
  EXPECT_TRUE(w.conflict_free);
  const auto one = simulate_pipeline(160, 4, GenMode::one_per_cycle);
  EXPECT_EQ(one.first_start, 32u);
  EXPECT_EQ(one.total_cycles, 32u * 5 + 4);
  EXPECT_EQ(one.all_indices_ready, 160u);
  EXPECT_EQ(one.index_units, 1u);
  const auto all = simulate_pipeline(160, 4, GenMode::all_at_once);
  EXPECT_EQ(all.first_start, 1u);
  EXPECT_EQ(all.total_cycles, w.total_cycles);  // 160 adders buy nothing over 32
  EXPECT_EQ(all.index_units, 160u);
  // A partial last warp: 100 threads = 4 warps, the last one ready after index 99.
  const auto part = simulate_pipeline(100, 3, GenMode::one_per_cycle);
  EXPECT_EQ(part.warps, 4u);
  EXPECT_EQ(part.all_indices_ready, 100u);
  EXPECT_EQ(part.total_cycles, 100u + 3);
  // Cycle 1 runs warp 0 instruction 0 on core 0; cycle 4 runs w3.i0, w2.i1, w1.i2, w0.i3.
  const std::string fig = schedule_diagram(160, 4, GenMode::warp_per_cycle, 6);
  EXPECT_NE(fig.find("    1 | w0.i0   | -"), std::string::npos) << fig;
  EXPECT_NE(fig.find("    4 | w3.i0   | w2.i1   | w1.i2   | w0.i3"), std::string::npos) << fig;
  EXPECT_THROW(simulate_pipeline(0, 4, GenMode::warp_per_cycle), UsageError);
  EXPECT_THROW(simulate_pipeline(10, 0, GenMode::warp_per_cycle), UsageError);
}

TEST(IndexCache, WorkedExampleMissMissHit) {
  int generated = 0;
  HistoryCache cache({}, [&](Dims3 d, std::size_t& bytes) -> std::shared_ptr<const void> {
    ++generated;
    auto t = std::make_shared<PackedTable>(build_packed_table(d));
    bytes = t->memory_bytes();
    return t;
  });
  const std::uint64_t addr1 = 1, addr2 = 2;
  const auto c1 = cache.lookup(addr1, {32, 64, 1});
  EXPECT_FALSE(c1.hit);
  EXPECT_TRUE(c1.stored);
  const auto c2 = cache.lookup(addr2, {100, 2, 2});
  EXPECT_FALSE(c2.hit);
  const auto c3 = cache.lookup(addr1, {32, 64, 1});
  EXPECT_TRUE(c3.hit);
  EXPECT_EQ(c3.payload.get(), c1.payload.get());  // the stored table is reused, not regenerated
  EXPECT_EQ(generated, 2);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 2u);
  const auto& t = HistoryCache::as<PackedTable>(c3);
  EXPECT_EQ(t.index(32 * 5 + 7), (Index3<std::uint32_t>{7, 5, 0}));
  // Same address, other dimensions: the filter misses and the address is regenerated.
  EXPECT_FALSE(cache.lookup(addr1, {64, 32, 1}).hit);
  EXPECT_FALSE(cache.lookup(addr1, {32, 64, 1}).hit);
  EXPECT_EQ(generated, 4);
}

TEST(IndexCache, HotKernelsGetDedicatedAddresses) {
  CacheOptions o;
  o.dedicated_slots = 1;
  o.hot_after = 3;
  HistoryCache cache(o);
  const Dims3 a{32, 8, 1}, b{7, 7, 7}, c{9, 9, 3};
  // "hot" is launched often; "cold1"/"cold2" alternate on the shared address and evict each other.
  for (int k = 0; k < 3; ++k) cache.request("hot", a);
  EXPECT_NE(cache.dedicated_address("hot"), 0u);
  const auto misses = cache.misses();
  for (int k = 0; k < 5; ++k) {
    EXPECT_TRUE(cache.request("hot", a).hit);
    EXPECT_FALSE(cache.request("cold1", b).hit);
    EXPECT_FALSE(cache.request("cold2", c).hit);
  }
  EXPECT_EQ(cache.launches("hot"), 8u);
  EXPECT_EQ(cache.launches("cold1"), 5u);
  // cold1 became hot too, but the only dedicated slot is taken: it stays shared.
  EXPECT_EQ(cache.dedicated_address("cold1"), 0u);
  EXPECT_EQ(cache.misses(), misses + 10);
  EXPECT_EQ(cache.request("cold2", c).hit, true);  // shared address still holds cold2's table
}

TEST(IndexCache, LittleMemoryMeansEveryKernelShares) {
  CacheOptions o;
  o.budget_bytes = 64 << 10;
  o.low_memory_bytes = 1 << 20;
  o.hot_after = 1;
  HistoryCache cache(o);
  for (int k = 0; k < 4; ++k) cache.request("k", {16, 16, 1});
  EXPECT_EQ(cache.dedicated_address("k"), 0u);
  EXPECT_EQ(cache.hits(), 3u);
}

TEST(IndexCache, BudgetEvictsAndRefusesOversizedTables) {
  CacheOptions o;
  o.budget_bytes = 2 * 1000 * 2 + 10;  // two 1000-entry 16-bit tables
  HistoryCache cache(o);
  const Dims3 d1{10, 10, 10}, d2{10, 100, 1}, d3{1000, 1, 1};
  cache.lookup(1, d1);
  cache.lookup(1, d1);  // address 1 used twice
  cache.lookup(2, d2);
  EXPECT_EQ(cache.bytes_used(), 4000u);
  cache.lookup(3, d3);  // evicts the least used (address 2)
  EXPECT_LE(cache.bytes_used(), o.budget_bytes);
  EXPECT_TRUE(cache.lookup(1, d1).hit);
  EXPECT_FALSE(cache.lookup(2, d2).hit);
  const auto big = cache.lookup(4, {100, 100, 1});  // 20000 bytes alone exceed the budget
  EXPECT_FALSE(big.stored);
  EXPECT_EQ(HistoryCache::as<PackedTable>(big).count(), 10000u);  // still returned, correct size
  EXPECT_FALSE(cache.lookup(4, {100, 100, 1}).hit);
  EXPECT_LE(cache.bytes_used(), o.budget_bytes);
}

TEST(IndexGather, EveryMethodGivesTheSameBytes) {
  for (const Dims3 d : {Dims3{5, 70, 10}, Dims3{1, 1, 1}, Dims3{33, 1, 7}, Dims3{64, 3, 2}}) {
    // Input: a contiguous tensor laid out (z fastest, then x, then y): a permute into x-fastest.
    GatherSpec s{d, std::int64_t(d.z), std::int64_t(d.z) * d.x, 1};
    std::vector<float> in(d.count());
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = float(i) * 0.5f - 3.0f;
    if (in.size() > 2) {
      in[1] = -0.0f;
      in[2] = std::nanf("");
    }
    std::vector<float> ref(d.count());
    for (std::uint32_t z = 0; z < d.z; ++z)
      for (std::uint32_t y = 0; y < d.y; ++y)
        for (std::uint32_t x = 0; x < d.x; ++x)
          ref[(std::size_t(z) * d.y + y) * d.x + x] = in[std::size_t(x) * s.stride_x + std::size_t(y) * s.stride_y + z];
    const PackedTable table = build_packed_table(d);
    for (Method m : {Method::div, Method::magic, Method::carry, Method::packed, Method::plain3d}) {
      std::vector<float> out(d.count(), 12345.0f);
      gather_cpu(in.data(), out.data(), s, m, &table);
      EXPECT_EQ(0, std::memcmp(out.data(), ref.data(), out.size() * sizeof(float)))
          << to_string(m) << " " << to_string(d);
    }
    std::vector<float> out(d.count());
    EXPECT_THROW(gather_cpu(in.data(), out.data(), s, Method::packed, nullptr), UsageError);
  }
  EXPECT_EQ(parse_method("carry"), Method::carry);
  EXPECT_THROW(parse_method("modulo"), UsageError);
}

TEST(IndexDims, ParseAndLimits) {
  EXPECT_EQ(parse_dims("64x32x8"), (Dims3{64, 32, 8}));
  EXPECT_EQ(parse_dims("5"), (Dims3{5, 1, 1}));
  EXPECT_EQ(parse_dims("5X7"), (Dims3{5, 7, 1}));
  for (const char* bad : {"", "0x3x3", "3x0x3", "axb", "5x", "x5", "5xx5", "5x5x5x5", "-1x3x3", " 5x5", "5.5x2",
                          "99999999999999999999999x1"})
    EXPECT_THROW(parse_dims(bad), UsageError) << bad;
  EXPECT_THROW(parse_dims("70000x70000x1"), UsageError);  // over 2^32 in 32-bit mode
  EXPECT_EQ(parse_dims("70000x70000x1", false).count(), 4900000000ull);
  EXPECT_EQ(parse_dims("65536x65536x1").count(), 1ull << 32);     // exactly 2^32 is allowed
  EXPECT_THROW(parse_dims("4294967296x1x1", false), UsageError);  // an extent of 2^32
}
