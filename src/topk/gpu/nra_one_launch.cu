// NRA in one launch: the cooperative kernel and its device helpers (the design is in
// nra_one_launch.hpp and docs/topk.md).
#include <cooperative_groups.h>

#include "topk/gpu/nra_one_launch.hpp"

namespace tandem::topk::detail {
namespace {

// Data other blocks wrote in this launch: read through L2.
__device__ __forceinline__ Key96 load_key(const Key96* p) {
  const auto* w = reinterpret_cast<const unsigned long long*>(p);
  return Key96{__ldcg(w), __ldcg(reinterpret_cast<const unsigned int*>(w + 1)), 0};
}
__device__ __forceinline__ unsigned load_volatile(const unsigned* p) {
  return *reinterpret_cast<const volatile unsigned*>(p);
}

// q / w and q % w (32-bit division when both fit, the usual case).
__device__ __forceinline__ void split(std::uint64_t q, std::uint64_t w, std::uint32_t& i, std::uint64_t& p) {
  if (((q | w) >> 32) == 0) {
    const auto qq = static_cast<std::uint32_t>(q), ww = static_cast<std::uint32_t>(w);
    i = qq / ww;
    p = qq - i * ww;
  } else {
    i = static_cast<std::uint32_t>(q / w);
    p = q - std::uint64_t(i) * w;
  }
}

__device__ __forceinline__ Key96 shfl_key(const Key96& v, int o) {
  return Key96{__shfl_xor_sync(0xffffffffu, static_cast<unsigned long long>(v.hi), o),
               __shfl_xor_sync(0xffffffffu, v.id, o), 0};
}

// The block's smallest key, in every thread (`warp`: 32 keys of shared memory).
__device__ Key96 block_min_key(Key96 v, Key96* warp) {
  const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v = key_min(v, shfl_key(v, o));
  if (lane == 0) warp[w] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? warp[lane] : no_bound_key();
  for (int o = 16; o > 0; o >>= 1) v = key_min(v, shfl_key(v, o));
  __syncthreads();  // `warp` is free again
  return v;
}

// The block's sum, in every thread (`warp`: 32 words of shared memory).
__device__ unsigned long long block_sum(unsigned long long v, unsigned long long* warp) {
  const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (lane == 0) warp[w] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? warp[lane] : 0ull;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  return v;
}

// The sum of every block's number (`per_block`: gridDim.x of them), in every thread.
__device__ unsigned long long sum_blocks(const unsigned* per_block, unsigned long long* warp) {
  unsigned long long v = 0;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) v += __ldcg(per_block + b);
  return block_sum(v, warp);
}

// Exclusive prefix sums of one number per block (`count`, read by threads b < gridDim.x <= 1023)
// into offset[0..gridDim.x], offset[gridDim.x] the total. `warp`: 32 words of shared memory.
__device__ void block_offsets(unsigned long long count, unsigned long long* offset, unsigned long long* warp) {
  const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  unsigned long long incl = threadIdx.x < gridDim.x ? count : 0ull;
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned long long y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= unsigned(o)) incl += y;
  }
  if (lane == 31) warp[w] = incl;
  __syncthreads();
  if (w == 0) {
    const unsigned long long v = lane < blockDim.x / 32 ? warp[lane] : 0ull;
    unsigned long long s = v;
    for (int o = 1; o < 32; o <<= 1) {
      const unsigned long long y = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= unsigned(o)) s += y;
    }
    warp[lane] = s - v;
  }
  __syncthreads();
  const unsigned long long excl = warp[w] + incl - (threadIdx.x < gridDim.x ? count : 0ull);
  if (threadIdx.x <= gridDim.x) offset[threadIdx.x] = excl;
  __syncthreads();
}

// Sorts keys[0, width) into key order (width a power of two, at most blockDim.x): a bitonic
// network, one compare-exchange a thread a step. Every thread of the block calls it.
__device__ void block_sort_keys(Key96* keys, unsigned width) {
  for (unsigned size = 2; size <= width; size <<= 1)
    for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
      __syncthreads();
      const unsigned i = threadIdx.x, j = i ^ stride;
      if (i < width && j > i) {
        const Key96 x = keys[i], y = keys[j];
        if (key_less(y, x) == ((i & size) == 0)) {  // ascending where bit `size` of i is 0
          keys[i] = y;
          keys[j] = x;
        }
      }
    }
  __syncthreads();
}

// Whether this block is the last of the grid to arrive at `counter` (the other blocks' writes
// then visible to it).
__device__ bool last_to_arrive(unsigned* counter, int* flag) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    *flag = atomicAdd(counter, 1u) == gridDim.x - 1;
    if (*flag) __threadfence();
  }
  __syncthreads();
  return *flag;
}

// The block whose offset range [offset[b], offset[b + 1]) holds position g.
__device__ __forceinline__ unsigned block_of(const unsigned long long* offset, std::uint64_t g) {
  unsigned lo = 0, hi = gridDim.x;
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    if (offset[mid] <= g) lo = mid;
    else hi = mid;
  }
  return lo;
}

// 1. Levels [from, to) of every list: each entry to the inbox of the block whose range holds its
// object's home (a block's entries per inbox counted in shared memory, then one atomic per inbox
// for their place). `count`, `place`: gridDim.x words of shared memory, zero.
__device__ void shallow_send(const ShallowArgs& s, std::uint64_t from, std::uint64_t to, unsigned* count,
                             unsigned* place) {
  constexpr int kU = 4;
  const std::uint64_t width = to - from, total = width * s.n, entries = s.range * gridDim.x;
  const std::uint64_t chunk = std::uint64_t(blockDim.x) * kU;
  for (std::uint64_t base = blockIdx.x * chunk; base < total; base += chunk * gridDim.x) {
    Entry x[kU];
    std::uint32_t li[kU], dest[kU], at[kU];
#pragma unroll
    for (int j = 0; j < kU; ++j) {
      const std::uint64_t q = base + std::uint64_t(j) * blockDim.x + threadIdx.x;
      x[j] = Entry{~0u, 0.0f};
      li[j] = 0;
      if (q < total) {
        std::uint64_t p;
        split(q, width, li[j], p);
        x[j] = s.L[std::uint64_t(li[j]) * s.m + from + p];
      }
      dest[j] = 0;
      at[j] = 0;
      if (x[j].id < s.m) {
        dest[j] = unsigned(table_home(x[j].id, entries) / s.range);
        at[j] = atomicAdd(count + dest[j], 1u);
      }
    }
    __syncthreads();
    for (unsigned d = threadIdx.x; d < gridDim.x; d += blockDim.x)
      if (count[d]) place[d] = atomicAdd(s.sent + d, count[d]);
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kU; ++j) {
      if (x[j].id >= s.m) continue;
      const std::uint64_t slot = std::uint64_t(place[dest[j]]) + at[j];
      if (slot < s.box) s.inbox[dest[j] * s.box + slot] = make_uint4(x[j].id, li[j], __float_as_uint(x[j].score), 0u);
      else atomicOr(&s.f->overflow, 1u);
    }
    __syncthreads();
    for (unsigned d = threadIdx.x; d < gridDim.x; d += blockDim.x) count[d] = 0;
    __syncthreads();
  }
}

// 2a. This block's inbox into its range of the table: keys[range] (id + 1; 0 free), then n arrays
// of range scores (kUnseen until read). Returns the entries this thread claimed.
__device__ unsigned shallow_insert(const ShallowArgs& s, std::uint32_t* keys, float* scores) {
  const std::uint64_t entries = s.range * gridDim.x, lo = blockIdx.x * s.range;
  const unsigned items = __ldcg(s.sent + blockIdx.x);
  const uint4* box = s.inbox + blockIdx.x * s.box;
  unsigned claimed = 0;
  for (unsigned q = threadIdx.x; q < items && q < s.box; q += blockDim.x) {
    const uint4 v = __ldcg(box + q);
    const std::uint32_t mine = table_key(v.x);
    std::uint64_t e = table_home(v.x, entries) - lo;
    for (std::uint32_t probes = 0;; ++probes) {
      std::uint32_t key = keys[e];
      if (key == 0) {
        key = atomicCAS(keys + e, 0u, mine);
        if (key == 0) {
          ++claimed;
          key = mine;
        }
      }
      if (key == mine) {
        scores[v.y * s.range + e] = __uint_as_float(v.z);
        break;
      }
      if (probes == kShallowProbes) {
        atomicOr(&s.f->overflow, 1u);
        break;
      }
      e = e + 1 == s.range ? 0 : e + 1;
    }
  }
  return claimed;
}

// acc_of, with a sum's scaling by the unit a multiplication when unit_inverse has it.
__device__ __forceinline__ Acc acc_of_scaled(const AggSpec& a, std::uint32_t i, float v, double inverse) {
  if (is_sum(a.kind) && inverse != 0) return to_fixed_units(agg_value(a, i, v) * inverse);
  return acc_of(a, i, v);
}

// A table entry (key != 0): its key when every list was seen (true), else its bound key.
__device__ __forceinline__ bool entry_key(const ShallowArgs& s, const float* scores, std::uint64_t e, std::uint32_t key,
                                          const Acc* tval, Key96& out) {
  Acc acc = acc_identity(s.a.kind);
  bool complete = true;
#pragma unroll 4
  for (std::uint32_t i = 0; i < s.n; ++i) {
    const float v = scores[i * s.range + e];
    const bool seen = __float_as_uint(v) != kUnseen;
    complete &= seen;
    acc = acc_combine(s.a.kind, acc, seen ? acc_of_scaled(s.a, i, v, s.inverse) : tval[i]);
  }
  out = make_key(acc_score(s.a, acc), key - 1);
  return complete;
}

// The status into host memory (every thread of the block calls it, after its answer writes):
// the fields, one fence for them and the answer, then the state the host polls.
__device__ void write_status(const ShallowArgs& s, const ShallowStatus& st) {
  auto* h = reinterpret_cast<volatile unsigned*>(s.out);
  if (threadIdx.x == 0) {
    h[1] = st.rounds;
    *reinterpret_cast<volatile unsigned long long*>(h + 2) = st.depth;
    *reinterpret_cast<volatile unsigned long long*>(h + 4) = st.complete;
    h[6] = st.ranked;
    h[7] = st.cap;
  }
  __threadfence_system();
  __syncthreads();
  if (threadIdx.x == 0) h[0] = st.state;
}

// 2a'. The round's start in this block: its inbox into its range (entries it claimed added to
// `claims`), each list's last score read as an accumulator (`tval`), and in thread 0 this block's
// counts published and T's order key (`t_key`). `held` back at zero.
__device__ __forceinline__ void shallow_round_start(const ShallowArgs& s, std::uint32_t* keys, float* scores,
                                                    std::uint64_t depth, Acc* tval, unsigned& claims, unsigned& held,
                                                    std::uint64_t& t_key) {
  const unsigned b = blockIdx.x;
  const unsigned mine = shallow_insert(s, keys, scores);
  if (mine) atomicAdd(&claims, mine);
  for (std::uint32_t i = threadIdx.x; i < s.n; i += blockDim.x)
    tval[i] = acc_of(s.a, i, s.L[i * s.m + depth - 1].score);
  if (threadIdx.x == 0) held = 0;
  __syncthreads();
  if (threadIdx.x == 0) {
    s.sent[b] = 0;  // read: zero for the next round
    s.num.claims[b] = claims;
    Acc t = acc_identity(s.a.kind);
    for (std::uint32_t i = 0; i < s.n; ++i) t = acc_combine(s.a.kind, t, tval[i]);
    t_key = order_key(acc_score(s.a, t));
  }
}

// 2b. This block's range of the table: its complete objects' keys into its slab (the first
// kShallowThreads also into `tile`, `held` counting them), and this thread's smallest bound key of
// the partial ones (returned). The taken entries (a third or so), dealt out to each warp's lanes
// densely: of the warp's 32 x kU entries, taken entry d is the (d - first[j])-th set bit of taken[j].
__device__ __forceinline__ Key96 shallow_collect(const ShallowArgs& s, const std::uint32_t* keys, const float* scores,
                                                 const Acc* tval, Key96* tile, Key96* slab, unsigned& held) {
  Key96 best = no_bound_key();
  constexpr int kU = 4;
  const unsigned lane = threadIdx.x & 31, warp_first = threadIdx.x & ~31u;
  for (std::uint64_t b0 = 0; b0 < s.range; b0 += std::uint64_t(blockDim.x) * kU) {
    std::uint32_t key[kU], taken[kU], first[kU + 1];
    first[0] = 0;
#pragma unroll
    for (int j = 0; j < kU; ++j) {
      const std::uint64_t e = b0 + std::uint64_t(j) * blockDim.x + threadIdx.x;
      key[j] = e < s.range ? keys[e] : 0u;
      taken[j] = __ballot_sync(0xffffffffu, key[j] != 0);
      first[j + 1] = first[j] + __popc(taken[j]);
    }
    for (unsigned d0 = 0; d0 < first[kU]; d0 += 32) {
      const unsigned d = d0 + lane;
      int jj = 0;
      unsigned tj = taken[0], fj = 0;
#pragma unroll
      for (int j = 1; j < kU; ++j)
        if (d >= first[j]) {
          jj = j;
          tj = taken[j];
          fj = first[j];
        }
      const unsigned src = d < first[kU] ? __fns(tj, 0, int(d - fj) + 1) : 0u;
      std::uint32_t k = 0;
#pragma unroll
      for (int j = 0; j < kU; ++j) {
        const std::uint32_t v = __shfl_sync(0xffffffffu, key[j], int(src));
        if (j == jj) k = v;
      }
      const bool real = d < first[kU];
      Key96 k96 = no_bound_key();
      const bool whole =
          real && entry_key(s, scores, b0 + std::uint64_t(jj) * blockDim.x + warp_first + src, k, tval, k96);
      // One shared atomic a warp for its complete objects' places (lanes on one address serialise).
      const unsigned done = __ballot_sync(0xffffffffu, whole);
      if (done) {
        unsigned base = 0;
        if (lane == 0) base = atomicAdd(&held, unsigned(__popc(done)));
        base = __shfl_sync(0xffffffffu, base, 0);
        if (whole) {
          const unsigned at = base + unsigned(__popc(done & ((1u << lane) - 1u)));
          if (at < kShallowThreads) tile[at] = k96;
          slab[at] = k96;
        }
      }
      if (real && !whole) best = key_min(best, k96);
    }
  }
  return best;
}

// 3. The bound (the smallest of every block's, and T's below the full depth); where each block's
// complete objects start in the order of all (`offset`, block by block); of this block's
// `mine_complete` objects, those before the bound and those above T, and how many of them rank
// before each sample, published. Returns the complete objects of all blocks.
__device__ __forceinline__ std::uint64_t shallow_count(const ShallowArgs& s, std::uint64_t depth,
                                                       const std::uint64_t& t_key, unsigned mine_complete,
                                                       const Key96* slab, Key96* tile, Key96* red,
                                                       unsigned long long* sums, unsigned long long* offset) {
  const unsigned b = blockIdx.x, blocks = gridDim.x;
  Key96 bound = no_bound_key();
  for (unsigned j = threadIdx.x; j < blocks; j += blockDim.x) bound = key_min(bound, load_key(s.block_min + j));
  bound = block_min_key(bound, red);
  if (depth < s.m) bound = key_min(bound, Key96{t_key, 0, 0});
  // Where each block's objects start in the order of all (block by block), and the samples.
  block_offsets(threadIdx.x < blocks ? __ldcg(s.num.complete + threadIdx.x) : 0u, offset, sums);
  const std::uint64_t complete = offset[blocks];
  // Sample t is ranked by threads 8t..8t+7, one eighth of the objects each (with one thread a
  // sample, the count ran one shared load at a time on four warps).
  const std::uint64_t samples = shallow_samples(complete);
  const unsigned t = threadIdx.x / 8, part = threadIdx.x % 8;
  Key96 sample = no_bound_key();
  if (t < samples) {
    const std::uint64_t g = shallow_sample_at(t, complete);
    const unsigned owner = block_of(offset, g);
    sample = load_key(s.comp + owner * s.range + (g - offset[owner]));
  }
  unsigned long long before = 0, above = 0;
  unsigned below = 0;
  for (std::uint64_t b0 = 0; b0 < mine_complete; b0 += blockDim.x) {
    const std::uint64_t items = mine_complete - b0 < blockDim.x ? mine_complete - b0 : blockDim.x;
    if (b0 > 0 && threadIdx.x < items) tile[threadIdx.x] = load_key(slab + b0 + threadIdx.x);
    __syncthreads();
    if (threadIdx.x < items) {
      before += key_less(tile[threadIdx.x], bound);
      above += tile[threadIdx.x].hi < t_key;
    }
    if (t < samples)
      for (std::uint64_t j = part; j < items; j += 8) below += key_less(tile[j], sample);
    __syncthreads();
  }
  for (int o = 1; o < 8; o <<= 1) below += __shfl_xor_sync(0xffffffffu, below, o);
  if (t < samples && part == 0) s.num.srank[std::uint64_t(t) * s.num.row + b] = below;
  const unsigned long long both = block_sum((above << 32) | before, sums);  // each below 2^32
  if (threadIdx.x == 0) {
    s.num.before[b] = unsigned(both);
    s.num.beat[b] = unsigned(both >> 32);
  }
  return complete;
}

// 5a. The cut, in every thread: the smallest sample with k complete objects at or before it (each
// sample's rank among all, added up from the blocks' rows); no cut (the largest key) when every
// object is a sample.
__device__ __forceinline__ Key96 shallow_cut(const ShallowArgs& s, std::uint64_t complete,
                                             const unsigned long long* offset, Key96* red) {
  const std::uint64_t samples = shallow_samples(complete);
  Key96 cut = no_bound_key();
  if (complete > kShallowSamples) {
    // Sample t's row (four blocks a load; rows padded with zeros), eight threads a row.
    const unsigned t = threadIdx.x / 8, part = threadIdx.x % 8;
    unsigned long long r = 0;
    if (t < samples) {
      const auto* row = reinterpret_cast<const uint4*>(s.num.srank + std::uint64_t(t) * s.num.row);
      for (unsigned j = part; j < s.num.row / 4; j += 8) {
        const uint4 v = __ldcg(row + j);
        r += std::uint64_t(v.x) + v.y + v.z + v.w;
      }
    }
    for (int o = 1; o < 8; o <<= 1) r += __shfl_xor_sync(0xffffffffu, r, o);
    if (t < samples && part == 0 && r + 1 >= s.k) {
      const std::uint64_t g = shallow_sample_at(t, complete);
      const unsigned owner = block_of(offset, g);
      cut = load_key(s.comp + owner * s.range + (g - offset[owner]));
    }
  }
  return block_min_key(cut, red);
}

// 5b. In the last block to arrive: every block's kept objects (at its offset among the complete
// ones, `koff` their own offsets) ranked in shared memory by a bitonic network, the k best and the
// status written; or, with more than kShallowRankMax kept, every complete object to `sorted` for
// the host.
__device__ __forceinline__ void shallow_rank_kept(const ShallowArgs& s, unsigned rounds, std::uint64_t depth,
                                                  std::uint64_t complete, const unsigned long long* offset,
                                                  unsigned long long* koff, unsigned long long* sums, Key96* tile) {
  const unsigned blocks = gridDim.x;
  block_offsets(threadIdx.x < blocks ? __ldcg(s.num.kept + threadIdx.x) : 0u, koff, sums);
  const unsigned long long ranked = koff[blocks];
  if (ranked > kShallowRankMax) {
    // The host sorts every complete object: they go to `sorted` (this block alone, the others done).
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (unsigned j = warp; j < blocks; j += blockDim.x / 32) {
      const unsigned long long c = offset[j + 1] - offset[j];
      for (unsigned long long q = lane; q < c; q += 32) s.sorted[offset[j] + q] = load_key(s.comp + j * s.range + q);
    }
    write_status(s, ShallowStatus{kShallowHostSort, rounds, depth, complete, 0, 0});
    return;
  }
  // Kept object i (in the block whose kept range holds it) at tile[i], the rest padded, sorted by a
  // bitonic network (each thread counting its rank against every kept object took ~8 us).
  Key96 own = no_bound_key();
  if (threadIdx.x < ranked) {
    const unsigned owner = block_of(koff, threadIdx.x);
    own = load_key(s.kept + offset[owner] + (threadIdx.x - koff[owner]));
  }
  tile[threadIdx.x] = own;
  unsigned width = 1;
  while (width < ranked) width <<= 1;
  block_sort_keys(tile, width);
  if (threadIdx.x < ranked && threadIdx.x < s.k) s.out[2 + threadIdx.x] = tile[threadIdx.x];
  write_status(s, ShallowStatus{kShallowAnswer, rounds, depth, complete, unsigned(ranked), 0});
}

__global__ void __launch_bounds__(kShallowThreads, 1) k_nra_shallow(const ShallowArgs s) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  extern __shared__ std::uint32_t shared_table[];
  __shared__ Acc tval[kShallowMaxLists];
  __shared__ Key96 red[32], tile[kShallowThreads];
  __shared__ unsigned long long sums[32], offset[kShallowThreads], koff[kShallowThreads];
  __shared__ unsigned count[kShallowThreads], place[kShallowThreads];
  __shared__ std::uint64_t t_key;
  __shared__ unsigned claims, held;
  __shared__ int last;
  const unsigned b = blockIdx.x, blocks = gridDim.x;
  Key96* const slab = s.comp + b * s.range;
  // This block's range of the table: free keys, unseen scores.
  std::uint32_t* const keys = s.table ? s.table + b * s.range * (1 + s.n) : shared_table;
  float* const scores = reinterpret_cast<float*>(keys + s.range);
  for (std::uint64_t q = threadIdx.x; q < s.range * (1 + s.n); q += blockDim.x) keys[q] = q < s.range ? 0u : kUnseen;
  if (b == 0 && threadIdx.x < sizeof(ShallowFlags) / 4) reinterpret_cast<unsigned*>(s.f_next)[threadIdx.x] = 0;
  for (unsigned d = threadIdx.x; d < blocks; d += blockDim.x) count[d] = 0;
  if (threadIdx.x == 0) claims = 0;
  __syncthreads();
  std::uint64_t depth = 0, next = s.first, complete = 0;
  unsigned rounds = 0;
  while (true) {
    // 1. Read the next levels, each entry to its block.
    shallow_send(s, depth, next, count, place);
    depth = next;
    grid.sync();
    // 2. This block's inbox into its range, then its range: its complete objects (into its
    // slab), its partial ones' smallest bound key.
    shallow_round_start(s, keys, scores, depth, tval, claims, held, t_key);
    Key96 best = shallow_collect(s, keys, scores, tval, tile, slab, held);
    best = block_min_key(best, red);
    const unsigned mine_complete = held;  // read after block_min_key's barriers
    if (threadIdx.x == 0) {
      s.block_min[b] = best;
      s.num.complete[b] = mine_complete;
    }
    grid.sync();
    // 3. The bound; of this block's complete objects, those before it and those above T; how many
    // of them rank before each sample.
    complete = shallow_count(s, depth, t_key, mine_complete, slab, tile, red, sums, offset);
    grid.sync();
    // 4. The decision: every block adds up the same numbers.
    const bool overflow = load_volatile(&s.f->overflow) != 0;
    const bool crowded = overflow || table_crowded(sum_blocks(s.num.claims, sums), s.range * blocks);
    const unsigned long long total_before = sum_blocks(s.num.before, sums);
    const unsigned long long total_beat = sum_blocks(s.num.beat, sums);
    ++rounds;
    if (!overflow && total_before >= s.k) break;
    if (overflow || depth >= s.budget || rounds == kShallowMaxRounds || crowded) {
      if (b == 0) write_status(s, ShallowStatus{kShallowGaveUp, rounds, depth, 0, 0, crowded ? 1u : 0u});
      return;
    }
    next = shallow_next_depth(depth, total_beat >= s.k, s.floor, s.budget);
  }
  // 5. The answer: the k best complete objects (all before the bound).
  const unsigned mine_complete = unsigned(offset[b + 1] - offset[b]);
  if (s.k > kShallowRankMax) {  // every complete object for the host to sort
    for (std::uint64_t j = threadIdx.x; j < mine_complete; j += blockDim.x)
      s.sorted[offset[b] + j] = load_key(slab + j);
    if (last_to_arrive(&s.f->arrive, &last))
      write_status(s, ShallowStatus{kShallowHostSort, rounds, depth, complete, 0, 0});
    return;
  }
  const Key96 cut = shallow_cut(s, complete, offset, red);
  // This block's objects at or before the cut, at its offset; the last block ranks them all.
  if (threadIdx.x == 0) held = 0;
  __syncthreads();
  for (std::uint64_t j = threadIdx.x; j < mine_complete; j += blockDim.x) {
    const Key96 key = load_key(slab + j);
    if (!key_less(cut, key)) s.kept[offset[b] + atomicAdd(&held, 1u)] = key;
  }
  __syncthreads();
  if (threadIdx.x == 0) s.num.kept[b] = held;
  if (!last_to_arrive(&s.f->arrive, &last)) return;
  shallow_rank_kept(s, rounds, depth, complete, offset, koff, sums, tile);
}

}  // namespace

const void* nra_one_launch_kernel() { return reinterpret_cast<const void*>(k_nra_shallow); }

}  // namespace tandem::topk::detail
