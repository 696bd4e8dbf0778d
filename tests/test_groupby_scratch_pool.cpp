// The CPU group-by's scratch pool: freed large blocks come back for the next request of their
// size class, and the pool never holds more than its limit.
#include <cstring>

#include <gtest/gtest.h>

#include "core/scratch.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define POOL_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_TEST_ASAN 1
#endif
#endif
#ifdef POOL_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

using namespace tandem;

TEST(ScratchPool, SizeClassesAreHugePageMultiplesAtMostAnEighthAbove) {
  const std::size_t page = std::size_t{2} << 20;
  EXPECT_EQ(scratch_class(page), page);
  EXPECT_EQ(scratch_class(page + 1), 2 * page);
  for (std::size_t bytes : {std::size_t{5} << 20, std::size_t{40'000'000}, std::size_t{123'456'789}}) {
    const std::size_t c = scratch_class(bytes);
    EXPECT_GE(c, bytes);
    EXPECT_EQ(c % page, 0u);
    EXPECT_LE(c - bytes, bytes / 8 + page);
  }
  EXPECT_EQ(scratch_class(40'000'000), scratch_class(40'100'000));  // near sizes share a class
}

TEST(ScratchPool, AFreedBlockServesTheNextRequestOfItsClass) {
  release_cached_scratch();
  const std::size_t n = std::size_t{10} << 20;
  const std::uint32_t* first = nullptr;
  {
    Scratch<std::uint32_t> a(n);
    a[0] = 7;
    a[n - 1] = 9;
    first = a.data();
  }
  EXPECT_GE(cached_scratch_bytes(), n * sizeof(std::uint32_t));
  Scratch<std::uint32_t> b(n - 1000);  // same class
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(cached_scratch_bytes(), 0u);
  Scratch<std::uint32_t> c(n);  // the pool is empty again: a new block
  EXPECT_NE(c.data(), first);
  c[n - 1] = 1;
  EXPECT_EQ(c[n - 1], 1u);
}

TEST(ScratchPool, HoldsAtMostItsLimit) {
  release_cached_scratch();
  const std::size_t block = std::size_t{64} << 20;
  std::vector<Scratch<char>> many;
  for (std::size_t held = 0; held <= cached_scratch_limit() + block && many.size() < 1024; held += block)
    many.emplace_back().reserve(block);  // allocated, never touched
  many.clear();
  EXPECT_LE(cached_scratch_bytes(), cached_scratch_limit());
  EXPECT_GT(cached_scratch_bytes(), 0u);
  release_cached_scratch();
  EXPECT_EQ(cached_scratch_bytes(), 0u);
}

TEST(ScratchPool, AHeldBlockIsPoisonedUnderAddressSanitizer) {
#ifdef POOL_TEST_ASAN
  release_cached_scratch();
  const std::size_t n = std::size_t{4} << 20;
  const char* held = nullptr;
  {
    Scratch<char> a;
    a.reserve(n);
    held = a.data();
  }
  EXPECT_TRUE(__asan_address_is_poisoned(held));  // a use after free would be reported
  Scratch<char> b;
  b.reserve(n);
  ASSERT_EQ(b.data(), held);
  EXPECT_FALSE(__asan_address_is_poisoned(b.data()));
  EXPECT_FALSE(__asan_address_is_poisoned(b.data() + n - 1));
#else
  GTEST_SKIP() << "not an AddressSanitizer build";
#endif
}

#ifndef POOL_TEST_ASAN
constexpr std::size_t kPage = std::size_t{2} << 20;

// A block of `bytes` from the pool, every byte `value`.
unsigned char* filled_block(std::size_t bytes, int value) {
  auto* p = static_cast<unsigned char*>(take_scratch(bytes));
  std::memset(p, value, bytes);
  return p;
}
#endif

// A request of a class the pool lacks gets the held blocks' pages moved into it: what was written
// there is still there (fresh pages would read zero), and what a block had left over stays held.
TEST(ScratchPool, HeldPagesServeARequestOfAnotherClass) {
#ifdef POOL_TEST_ASAN
  GTEST_SKIP() << "under AddressSanitizer only a block of the same class is reused";
#else
  release_cached_scratch();
  const std::size_t page = kPage;
  give_scratch(filled_block(4 * page, 0x5a), 4 * page);
  ASSERT_EQ(cached_scratch_bytes(), 4 * page);
  auto* b = static_cast<unsigned char*>(take_scratch(10 * page));  // 4 recycled pages, 6 fresh
  EXPECT_EQ(cached_scratch_bytes(), 0u);
  EXPECT_EQ(b[0], 0x5a);
  EXPECT_EQ(b[4 * page - 1], 0x5a);
  EXPECT_EQ(b[4 * page], 0);
  std::memset(b, 1, 10 * page);  // every byte writable
  give_scratch(b, 10 * page);
  ASSERT_EQ(cached_scratch_bytes(), 10 * page);

  auto* c = static_cast<unsigned char*>(take_scratch(2 * page));  // 2 of the 10 pages move
  EXPECT_EQ(c[0], 1);
  EXPECT_EQ(c[2 * page - 1], 1);
  EXPECT_EQ(cached_scratch_bytes(), 8 * page);
  auto* d = static_cast<unsigned char*>(take_scratch(8 * page));  // the rest, held as it was
  EXPECT_EQ(cached_scratch_bytes(), 0u);
  EXPECT_EQ(d[8 * page - 1], 1);
  give_scratch(c, 2 * page);
  give_scratch(d, 8 * page);
  release_cached_scratch();
  EXPECT_EQ(cached_scratch_bytes(), 0u);
#endif
}

// A block made of two held blocks' pages is two mappings; given back and moved again into a larger
// block, its pages still come along.
TEST(ScratchPool, ABlockMadeOfSeveralBlocksIsRecycledAgain) {
#ifdef POOL_TEST_ASAN
  GTEST_SKIP() << "under AddressSanitizer only a block of the same class is reused";
#else
  release_cached_scratch();
  const std::size_t page = kPage;
  unsigned char* a = filled_block(4 * page, 0x11);
  unsigned char* b = filled_block(2 * page, 0x22);  // taken while a is in use: a block of its own
  give_scratch(a, 4 * page);
  give_scratch(b, 2 * page);
  auto* joined = static_cast<unsigned char*>(take_scratch(6 * page));
  ASSERT_EQ(cached_scratch_bytes(), 0u);
  EXPECT_EQ(joined[0], 0x11);
  EXPECT_EQ(joined[4 * page - 1], 0x11);
  EXPECT_EQ(joined[4 * page], 0x22);
  EXPECT_EQ(joined[6 * page - 1], 0x22);
  give_scratch(joined, 6 * page);
  auto* again = static_cast<unsigned char*>(take_scratch(8 * page));
  EXPECT_EQ(cached_scratch_bytes(), 0u);
  EXPECT_EQ(again[page], 0x11);
  EXPECT_EQ(again[5 * page], 0x22);
  EXPECT_EQ(again[6 * page], 0);  // fresh
  give_scratch(again, 8 * page);
  release_cached_scratch();
#endif
}
