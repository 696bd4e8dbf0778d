// The device sort of 32-bit keys by two MSD scatters and a sort in shared memory, the part that
// is plain CPU code (the kernels are in msd_keys32_kernels.cuh).
//
// A 32-bit key is split into its top byte, its middle byte and its low 16 bits. One read counts
// every top 16-bit prefix; the keys are scattered by their top byte, then within each top bucket
// by their middle byte, and each of the 65,536 sub-buckets (one per 16-bit prefix) is sorted on
// its low 16 bits by one thread block in shared memory. That is three passes that read and write
// the keys plus one read, against CUB's four plus one, and no look-back between tiles: a tile
// reserves its place in each bucket with one atomic add (keys alone have no order to keep among
// equal keys). It pays only where the sub-buckets fit a block, so the plan checks the counts.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tandem::detail {

constexpr int kMsdKeys32TopBuckets = 256;
constexpr int kMsdKeys32SubBuckets = 65536;
// The scatter kernels' tile: threads x keys per thread.
constexpr std::uint32_t kMsdScatterThreads = 512;
constexpr std::uint32_t kMsdScatterItems = 16;
constexpr std::uint32_t kMsdScatterTile = kMsdScatterThreads * kMsdScatterItems;
// Below this many keys CUB's onesweep is as fast (the sub-buckets are too small to fill a block).
constexpr std::size_t kMsdKeys32MinElements = std::size_t{1} << 26;

// A shared-memory sort launch: blocks of `threads` x `items` keys sort the sub-buckets whose size
// lies in (lo, hi] (hi = threads * items).
struct LowSortClass {
  std::uint32_t threads, items, lo, hi;
};
// 256-thread blocks with more keys per thread measured faster than 512-thread ones (H200, 2^28
// uniform keys: 1.75 against 2.03 ms for all sub-bucket sorts). Sub-buckets above 8,192 keys
// (2^29 and 2^30 uniform keys: about 8,192 and 16,384 a prefix) take 512-thread blocks of up to
// 48 keys a thread (96 KiB of shared memory; 256 threads would need 96 registers of keys and
// ranks each).
constexpr std::array<LowSortClass, 10> kLowSortClasses{{
    {128, 8, 0, 1024},
    {256, 8, 1024, 2048},
    {256, 12, 2048, 3072},
    {256, 16, 3072, 4096},
    {256, 20, 4096, 5120},
    {256, 32, 5120, 8192},
    {512, 24, 8192, 12288},
    {512, 32, 12288, 16384},
    {512, 40, 16384, 20480},
    {512, 48, 20480, 24576},
}};
constexpr std::uint32_t kLowSortMax = kLowSortClasses.back().hi;

// Tiles of a scatter: bucket b covers keys [begin[b], begin[b + 1]) and tiles [tiles[b],
// tiles[b + 1]); a tile never spans two buckets, so it scatters into one bucket's cursors.
struct ScatterTiles {
  std::uint32_t begin[kMsdKeys32TopBuckets + 1];
  std::uint32_t tiles[kMsdKeys32TopBuckets + 1];
  std::uint32_t buckets;
  std::uint32_t total() const { return tiles[buckets]; }
};

struct MsdKeys32Plan {
  bool use{false};
  std::string why;
  ScatterTiles top{};                              // the first scatter: one bucket, all keys
  ScatterTiles mid{};                              // the second: one bucket per top byte
  std::array<bool, kLowSortClasses.size()> low{};  // which shared-memory sort launches run
};

// n keys; top_sizes: keys per top byte; sub_min / sub_max: the smallest non-empty and the largest
// sub-bucket. Declines below kMsdKeys32MinElements, above 2^31 - 1 keys, and when a sub-bucket
// exceeds kLowSortMax (skewed or few distinct keys: CUB's sort does not care).
MsdKeys32Plan plan_msd_keys32(std::size_t n, std::span<const std::uint32_t, kMsdKeys32TopBuckets> top_sizes,
                              std::uint32_t sub_min, std::uint32_t sub_max,
                              std::size_t min_elements = kMsdKeys32MinElements);

// Whether n keys may take this sort at all (checked before anything is counted).
constexpr bool msd_keys32_size_ok(std::size_t n, std::size_t min_elements = kMsdKeys32MinElements) {
  return n >= min_elements && n <= std::size_t{0x7FFFFFFF};
}

}  // namespace tandem::detail
