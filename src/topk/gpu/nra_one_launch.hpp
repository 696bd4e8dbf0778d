// NRA in one launch (a shallow stop: correlated lists, one list): the kernel's arguments, its
// status and its limits, shared by the kernel (nra_one_launch.cu) and the host code that sizes its
// buffers and launches it (nra.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "topk/internal.hpp"

namespace tandem::topk::detail {

// The exact NRA's rounds without a host round trip each: one cooperative grid (a block per SM)
// reads levels into a table of the objects seen (bounds.hpp, table_key), runs the stop test
// (bounds.hpp: k complete objects before the smallest bound key) and ranks the k best complete
// objects - the answer once the test passes, whatever the bound. The table is split into one
// range per block, in the block's shared memory when it fits (global memory otherwise): an entry
// read is first sent to the block whose range holds its object's home, which inserts it with
// shared-memory atomics. A round: the levels read, each entry sent to its block | each block
// inserts what it was sent and goes over its range (its complete objects' keys, its partial ones'
// smallest bound) | the count before the bound, and the ranks of up to kShallowSamples sampled
// complete objects | the decision, the same in every block. Then every block sends its complete
// objects at or before the sample cut to the last block to finish, which ranks them and writes
// the answer and the status into pinned host memory, where the host polls. Blocks report through
// arrays of their own (atomics on one address from every block serialise).
constexpr int kShallowThreads = 1024;
constexpr int kShallowMaxRounds = 64;
constexpr std::uint64_t kShallowMaxEntries = std::uint64_t{1} << 23;  // table entries at most
constexpr std::uint64_t kShallowRankMax = 1024;  // complete objects past the sample cut one block ranks
constexpr std::uint64_t kShallowFloor = 4096;
constexpr std::uint32_t kShallowProbes = 4096;  // a longer probe sequence gives up (the range is too full)
static_assert(kShallowSamples * 8 == kShallowThreads, "eight threads add up each sample's ranks");

enum : unsigned { kShallowAnswer = 1, kShallowHostSort = 2, kShallowGaveUp = 3 };

// Zero at a launch's start: two sets alternate, each launch zeroing the other's (`sent` is kept
// zero between rounds by the block that reads it).
struct ShallowFlags {
  unsigned overflow;  // a probe sequence, or a block's inbox, ran out of room
  unsigned arrive;    // blocks done sending their kept objects
};

// Each block's numbers for the round (rewritten every round).
struct BlockNumbers {
  unsigned* complete;  // complete objects in its range of the table (its slab of `comp`)
  unsigned* before;    // of them, before the bound
  unsigned* beat;      // of them, above T
  unsigned* claims;    // table entries it claimed (all rounds)
  unsigned* kept;      // complete objects at or before the sample cut
  unsigned* srank;     // [sample][block] (rows of `row` words): its complete objects before each sample
  unsigned row;
};

// Written into pinned host memory: the status, then (kShallowAnswer) the k best keys.
struct ShallowStatus {
  unsigned state;  // 0 until the kernel writes it
  unsigned rounds;
  unsigned long long depth;
  unsigned long long complete;  // complete objects at the stop (kShallowHostSort: in `sorted`, for the host)
  unsigned int ranked;          // of them, ranked by one block
  unsigned int cap;             // gave up: 1 the table filled up, 0 the depth budget
};
static_assert(sizeof(ShallowStatus) == 2 * sizeof(Key96));

struct ShallowArgs {
  const Entry* L;
  std::uint64_t m;
  std::uint32_t n;
  AggSpec a;
  double inverse;        // unit_inverse(a.scale)
  std::uint64_t range;   // table entries a block holds (entries = range x blocks)
  std::uint32_t* table;  // null: each range in its block's shared memory; else range b at b x range x (1 + n)
  uint4* inbox;          // entries sent to block b: at b x box, {id, list, score bits, 0}
  std::uint64_t box;
  unsigned* sent;  // how many each block was sent this round (its inbox's count)
  std::uint64_t k, first, budget, floor;
  Key96* comp;       // each block's slab of `range` keys: its complete objects
  Key96* kept;       // complete objects at or before the sample cut, at each block's offset
  Key96* sorted;     // kShallowHostSort: every complete object, for the host to sort
  Key96* block_min;  // each block's smallest bound key
  BlockNumbers num;
  ShallowFlags* f;       // this launch's flags
  ShallowFlags* f_next;  // the next launch's, zeroed by this one
  Key96* out;            // pinned host memory: ShallowStatus, then the k best keys
};

// k_nra_shallow's address, for the occupancy and attribute queries and the cooperative launch
// (one argument: a ShallowArgs).
const void* nra_one_launch_kernel();

}  // namespace tandem::topk::detail
