// Top-k on the GPU: NRA (phase 1 / phase 2 in batches of STRIDE levels), TA and the full
// scan. Design (see docs/topk.md): per-object state lives in a dense array indexed by id
// (partial aggregate + bitmap of lists seen), so a round is one pass over its batch with atomics;
// fully known objects that beat the current k-th enter a running top k (the paper's tmp) through a
// small radix sort; phase 2 prunes the candidate list by upper bound. Per round the host reads back
// one small status struct (counts and the batch's last scores) and decides. TA and the scan read
// the lists by id: each list's scores in id order, built once per upload. The scan adds every
// object's scores in float (an array that stays in L2), selects, and scores exactly only the
// objects the float's error bound cannot rule out.
#include <cooperative_groups.h>
#include <cub/cub.cuh>
#include <cuda/std/tuple>

#include <algorithm>
#include <atomic>
#include <cstring>

#include <string_view>

#include "internal.hpp"
#include "nra_one_launch.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"

namespace tandem::topk {

using namespace detail;

namespace {

struct Slot {
  Acc acc;
  unsigned long long mask;
};
static_assert(sizeof(Slot) == 24);

// What the host reads back each round.
struct DevState {
  unsigned long long touched;    // objects first seen (phase 1 / TA)
  unsigned long long completed;  // objects whose every list was read this round
  unsigned long long entrants;   // completed objects that beat the k-th
  unsigned long long remaining;  // phase-2 candidates kept by the last prune
  Key96 kth;
  int have_kth;
  int pad;
  float thr[kMaxLists];  // last score read in each list this round
  // The float NRA's probe (reset each probe): objects seen in some lists whose upper bound reaches
  // the cut; the order key of the k-th best complete float aggregate, and whether it was found
  // (0: fewer than k complete, 1: found, 2: more complete objects than one block selects among).
  unsigned long long open;
  std::uint32_t kth_key;
  int kth_state;
};

struct Key96Decomposer {
  __host__ __device__ ::cuda::std::tuple<std::uint64_t&, std::uint32_t&> operator()(Key96& k) const {
    return {k.hi, k.id};
  }
};

constexpr int kBlock = 256;

constexpr std::uint64_t kGridCap = 65535ull * 16;  // grid-stride loops cover the rest

// Sums: two 64-bit atomic adds (the low word's carry goes into the high word), exact once the
// kernel has finished. min/max: a compare-and-swap loop on the double's bits.
__device__ void atomic_combine(int kind, Acc* p, Acc v) {
  auto* lo = reinterpret_cast<unsigned long long*>(&p->lo);
  if (is_sum(kind)) {
    const unsigned long long old = atomicAdd(lo, static_cast<unsigned long long>(v.lo));
    const unsigned long long carry = old + v.lo < old;
    const unsigned long long dh = static_cast<unsigned long long>(v.hi) + carry;
    if (dh) atomicAdd(reinterpret_cast<unsigned long long*>(&p->hi), dh);
    return;
  }
  unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(lo);
  while (true) {
    if (acc_combine(kind, Acc{old, 0}, v).lo == old) return;
    const unsigned long long got = atomicCAS(lo, old, static_cast<unsigned long long>(v.lo));
    if (got == old) return;
    old = got;
  }
}

__global__ void k_init_slots(Slot* s, std::uint64_t m, Acc ident) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < m;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    s[i] = Slot{ident, 0ull};
}

__global__ void k_reset_slots(const std::uint32_t* ids, std::uint64_t count, Slot* s, std::uint64_t m, Acc ident) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < count;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t id = ids[i];
    if (id < m) s[id] = Slot{ident, 0ull};
  }
}

// Entry q of a batch of levels [d, d + width) of every list: list i = q / width, level
// d + q % width (consecutive threads read consecutive entries of one list). The batch's last level
// records each list's score in st->thr, the bound for objects not seen yet.
__device__ __forceinline__ Entry batch_entry(const Entry* L, std::uint64_t m, std::uint64_t d, std::uint64_t width,
                                             std::uint64_t q, DevState* st, std::uint32_t& i) {
  i = static_cast<std::uint32_t>(q / width);
  const std::uint64_t p = d + q % width;
  const Entry x = L[std::uint64_t(i) * m + p];
  if (p == d + width - 1) st->thr[i] = x.score;
  return x;
}

// One NRA batch: levels [d, d + width) of every list. Thread q reads list q / width, level q % width
// (consecutive threads read consecutive entries of one list).
__global__ void k_nra_scatter(const Entry* L, std::uint64_t m, std::uint32_t n, std::uint64_t d, std::uint64_t width,
                              AggSpec a, Slot* s, unsigned long long full, int phase2, std::uint32_t* touched,
                              std::uint32_t* completed, DevState* st) {
  const std::uint64_t total = width * n;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < total;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    std::uint32_t i;
    const Entry x = batch_entry(L, m, d, width, q, st, i);
    if (x.id >= m) continue;  // validated input never has this; stay in bounds regardless
    Slot* o = s + x.id;
    // Phase 2 ignores objects never seen: they cannot enter the top k any more.
    if (phase2 && *reinterpret_cast<volatile unsigned long long*>(&o->mask) == 0ull) continue;
    atomic_combine(a.kind, &o->acc, acc_of(a, i, x.score));
    const unsigned long long bit = 1ull << i;
    const unsigned long long old = atomicOr(&o->mask, bit);
    if (old == 0ull) touched[atomicAdd(&st->touched, 1ull)] = x.id;
    if ((old | bit) == full) completed[atomicAdd(&st->completed, 1ull)] = x.id;
  }
}

// Completed objects better than the current k-th go to `out` (after the running top k).
__global__ void k_nra_entrants(const std::uint32_t* completed, const Slot* s, int kind, int scale, DevState* st,
                               Key96* out) {
  const unsigned long long count = st->completed;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < count;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t id = completed[q];
    const Key96 key = make_key(acc_score(kind, scale, s[id].acc), id);
    if (!st->have_kth || key_less(key, st->kth)) out[atomicAdd(&st->entrants, 1ull)] = key;
  }
}

// Phase 2: keep candidates not fully known whose upper bound may still beat the k-th.
__global__ void k_nra_prune(const std::uint32_t* in, std::uint64_t count, const Slot* s, AggSpec a,
                            unsigned long long full, DevState* st, std::uint32_t* out) {
  __shared__ Acc tval[kMaxLists];
  for (std::uint32_t i = threadIdx.x; i < a.n; i += blockDim.x) tval[i] = acc_of(a, i, st->thr[i]);
  __syncthreads();
  const Key96 kth = st->kth;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < count;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t id = in[q];
    const Slot o = s[id];
    if (o.mask != full && may_beat(acc_score(a, upper_bound(a.kind, o.acc, o.mask, full, tval)), id, kth))
      out[atomicAdd(&st->remaining, 1ull)] = id;
  }
}

// Merging a handful of entrants into the running top k: one block sorts up to kSmallSort keys in
// shared memory (one launch) instead of the device radix sort's dozen passes over 96-bit keys.
constexpr int kSmallThreads = 256;
constexpr int kSmallItems = 8;
constexpr std::uint64_t kSmallSort = kSmallThreads * kSmallItems;

struct KeyLess {
  __device__ bool operator()(const Key96& a, const Key96& b) const { return key_less(a, b); }
};

__global__ void __launch_bounds__(kSmallThreads) k_small_sort(const Key96* in, Key96* out, int count) {
  using Sort = cub::BlockMergeSort<Key96, kSmallThreads, kSmallItems>;
  __shared__ typename Sort::TempStorage tmp;
  Key96 items[kSmallItems];
  const Key96 pad{~0ull, 0xffffffffu, 0};
  cub::LoadDirectBlocked(int(threadIdx.x), in, items, count, pad);
  Sort(tmp).Sort(items, KeyLess{}, count, pad);
  cub::StoreDirectBlocked(int(threadIdx.x), out, items, count);
}

__global__ void k_set_kth(const Key96* top, std::uint64_t k, DevState* st) {
  st->kth = top[k - 1];
  st->have_kth = 1;
}

// The lists by id (TA's random access, the scan's dense pass): index[i * m + id] = score of id in list i.
__global__ void k_score_index(const Entry* L, std::uint64_t m, std::uint32_t n, float* ix) {
  const std::uint64_t total = m * n;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < total;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const Entry x = L[q];
    if (x.id < m) ix[(q / m) * m + x.id] = x.score;
  }
}

// TA batch: each object met for the first time is scored by random access, in list order.
__global__ void k_ta_round(const Entry* L, std::uint64_t m, std::uint32_t n, std::uint64_t d, std::uint64_t width,
                           AggSpec a, const float* ix, Slot* s, std::uint32_t* touched, DevState* st, Key96* out) {
  const std::uint64_t total = width * n;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < total;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    std::uint32_t i;
    const Entry x = batch_entry(L, m, d, width, q, st, i);
    if (x.id >= m) continue;
    if (atomicOr(&s[x.id].mask, 1ull) != 0ull) continue;
    touched[atomicAdd(&st->touched, 1ull)] = x.id;
    Acc v = acc_identity(a.kind);
    for (std::uint32_t j = 0; j < n; ++j) v = acc_combine(a.kind, v, acc_of(a, j, ix[std::uint64_t(j) * m + x.id]));
    const Key96 key = make_key(acc_score(a, v), x.id);
    if (!st->have_kth || key_less(key, st->kth)) out[atomicAdd(&st->entrants, 1ull)] = key;
  }
}

constexpr int kDigitBits = 11;
constexpr int kBins = 1 << kDigitBits;

// Radix select keys: ascending as the score descends (64-bit for double scores, 32 for floats).
__device__ __forceinline__ std::uint64_t select_key(double s) { return order_key(s); }
__device__ __forceinline__ std::uint32_t select_key(float s) { return order_key32(s); }

// A radix select on the device: the bucket (top `bits` key bits = prefix) holding the k-th best,
// `less` objects before it and `eq` in it; lost = 1 if a pass found no such bucket (a bug).
struct SelectState {
  unsigned long long prefix, less, eq;
  unsigned long long count;  // objects the compaction after the select kept
  int bits, lost;
};

// Radix select: histogram of the next `width` key bits among objects in the select's bucket.
template <class T>
__global__ void k_select_hist(const T* acc, std::uint64_t m, const SelectState* st, int width,
                              unsigned long long* hist) {
  constexpr int kKeyBits = 8 * sizeof(T);
  __shared__ unsigned int h[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) h[b] = 0;
  __syncthreads();
  const std::uint64_t prefix = st->prefix;
  const int bits = st->bits;
  const unsigned mask = (1u << width) - 1;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  // Every lane of a warp runs the same number of iterations, so the warp can aggregate its
  // increments (scores cluster in few bins: plain shared atomics would serialise).
  const std::uint64_t first = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  const std::uint64_t warp_first = first - (threadIdx.x & 31);
  for (std::uint64_t base = warp_first; base < m; base += stride) {
    const std::uint64_t id = base + (threadIdx.x & 31);
    int bin = -1;
    if (id < m) {
      const std::uint64_t key = select_key(acc[id]);
      if (bits == 0 || (key >> (kKeyBits - bits)) == prefix)
        bin = int(unsigned(key >> (kKeyBits - bits - width)) & mask);
    }
    if (!__any_sync(0xffffffffu, bin >= 0)) continue;  // later passes: most warps hold no object of the bucket
    const unsigned peers = __match_any_sync(0xffffffffu, bin);
    if (bin >= 0 && (threadIdx.x & 31) == unsigned(__ffs(peers) - 1)) atomicAdd(&h[bin], unsigned(__popc(peers)));
  }
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (h[b]) atomicAdd(&hist[b], static_cast<unsigned long long>(h[b]));
}

// One block picks the bin holding the k-th and narrows the select's bucket to it (no host round trip).
constexpr int kPickThreads = kBins / 2;
__global__ void __launch_bounds__(kPickThreads)
    k_select_pick(const unsigned long long* hist, int width, std::uint64_t k, SelectState* st) {
  using Scan = cub::BlockScan<unsigned long long, kPickThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const SelectState s = *st;
  const int b0 = 2 * int(threadIdx.x), bins = 1 << width;
  const unsigned long long h0 = b0 < bins ? hist[b0] : 0, h1 = b0 + 1 < bins ? hist[b0 + 1] : 0;
  unsigned long long before = 0;
  Scan(tmp).ExclusiveSum(h0 + h1, before);
  __syncthreads();  // every thread has read *st
  const unsigned long long need = k - s.less;
  auto take = [&](int bin, unsigned long long at, unsigned long long count) {
    st->prefix = (s.prefix << width) | unsigned(bin);
    st->less = s.less + at;
    st->eq = count;
    st->bits = s.bits + width;
  };
  if (before < need && before + h0 >= need) take(b0, before, h0);
  else if (before + h0 < need && before + h0 + h1 >= need) take(b0 + 1, before + h0, h1);
  if (threadIdx.x == kPickThreads - 1 && before + h0 + h1 < need) st->lost = 1;
}

// Objects whose top `bits` key bits are <= the select's prefix (the top k, plus ties of the last digit).
__global__ void k_select_compact(const double* acc, std::uint64_t m, const SelectState* st, Key96* out,
                                 std::uint64_t cap, unsigned long long* count) {
  const std::uint64_t prefix = st->prefix;
  const int bits = st->bits;
  for (std::uint64_t id = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; id < m;
       id += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t key = order_key(acc[id]);
    if (bits > 0 && (key >> (64 - bits)) > prefix) continue;
    const unsigned long long at = atomicAdd(count, 1ull);
    if (at < cap) out[at] = Key96{key, std::uint32_t(id), 0};
  }
}

// The scan's float pass: every object's float aggregate from the index, lists in order.
__global__ void k_dense_approx(const float* ix, std::uint64_t m, AggSpec a, float* approx) {
  for (std::uint64_t o = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; o < m;
       o += std::uint64_t(gridDim.x) * blockDim.x) {
    float v = approx_identity(a.kind);
    for (std::uint32_t i = 0; i < a.n; ++i) v = approx_combine(a.kind, v, approx_value(a, i, ix[i * m + o]));
    approx[o] = v;
  }
}

// An object's exact score from the index, lists in order.
__device__ double exact_score(const float* ix, std::uint64_t m, const AggSpec& a, std::uint64_t id) {
  Acc v = acc_identity(a.kind);
  for (std::uint32_t i = 0; i < a.n; ++i) v = acc_combine(a.kind, v, acc_of(a, i, ix[i * m + id]));
  return acc_score(a, v);
}

// The exact score of every object from the index (the scan without the float filter).
__global__ void k_dense_exact(const float* ix, std::uint64_t m, AggSpec a, double* score) {
  for (std::uint64_t o = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; o < m;
       o += std::uint64_t(gridDim.x) * blockDim.x)
    score[o] = exact_score(ix, m, a, o);
}

// Candidates: objects whose float aggregate reaches the cut below the select's bucket (any order:
// their keys are sorted).
__global__ void k_approx_candidates(const float* approx, std::uint64_t m, const SelectState* st, double error,
                                    std::uint32_t* ids, std::uint64_t cap, unsigned long long* count) {
  const float cut = approx_cut(bucket_low(st->prefix, st->bits), error);
  for (std::uint64_t id = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; id < m;
       id += std::uint64_t(gridDim.x) * blockDim.x) {
    if (!(approx[id] >= cut)) continue;
    const unsigned long long at = atomicAdd(count, 1ull);
    if (at < cap) ids[at] = std::uint32_t(id);
  }
}

// The candidates' exact scores, by random access to the index.
__global__ void k_candidate_keys(const std::uint32_t* ids, std::uint64_t count, const float* ix, std::uint64_t m,
                                 AggSpec a, Key96* out) {
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < count;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t id = ids[q];
    out[q] = make_key(exact_score(ix, m, a, id), id);
  }
}

// ---- NRA on float partial aggregates (sums) ----
// Levels [d, d + width) of every list into the words, one 32-bit word per object (packed_add in
// bounds.hpp) updated by compare-and-swap (ids are spread: retries are rare); objects seen in every
// list for the first time are appended to `completed`.
__global__ void k_fnra_scatter(const Entry* L, std::uint64_t m, std::uint32_t n, std::uint64_t d, std::uint64_t width,
                               AggSpec a, std::uint32_t* words, std::uint32_t full, std::uint32_t* completed,
                               DevState* st) {
  const std::uint64_t total = width * n;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < total;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    std::uint32_t i;
    const Entry x = batch_entry(L, m, d, width, q, st, i);
    if (x.id >= m) continue;  // validated input never has this; stay in bounds regardless
    const float v = approx_value(a, i, x.score);
    std::uint32_t old = words[x.id];
    while (true) {
      const std::uint32_t got = atomicCAS(&words[x.id], old, packed_add(old, v, i, n));
      if (got == old) break;
      old = got;
    }
    const std::uint32_t before = packed_seen(old, n);
    if ((before | (1u << i)) == full && before != full) completed[atomicAdd(&st->completed, 1ull)] = x.id;
  }
}

// The completed objects' float aggregates, for the select.
__global__ void k_fnra_gather(const std::uint32_t* completed, std::uint64_t count, const std::uint32_t* words,
                              std::uint32_t n, float* out) {
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < count;
       q += std::uint64_t(gridDim.x) * blockDim.x)
    out[q] = packed_part(words[completed[q]], n);
}

constexpr int kBlockSelectThreads = 1024;
constexpr std::uint64_t kBlockSelectMax = 65536;

// The k-th best of the completed objects' float aggregates, by one block when there are at most
// kBlockSelectMax of them (st->kth_state 2 otherwise): four 8-bit radix passes over their order
// keys, re-read from the words (in L2) each pass.
__global__ void __launch_bounds__(kBlockSelectThreads)
    k_fnra_block_select(const std::uint32_t* completed, const std::uint32_t* words, std::uint32_t n, std::uint64_t k,
                        DevState* st) {
  __shared__ unsigned int hist[256];
  __shared__ std::uint32_t prefix;
  __shared__ unsigned long long need;
  const unsigned long long count = st->completed;
  if (count < k || count > kBlockSelectMax) {
    if (threadIdx.x == 0) st->kth_state = count < k ? 0 : 2;
    return;
  }
  if (threadIdx.x == 0) {
    prefix = 0;
    need = k;
  }
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    const std::uint32_t want = prefix;
    for (std::uint64_t j = threadIdx.x; j < count; j += blockDim.x) {
      const std::uint32_t key = order_key32(packed_part(words[completed[j]], n));
      if (pass == 0 || (key >> (shift + 8)) == want) atomicAdd(&hist[(key >> shift) & 255u], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long before = 0;
      int b = 0;
      for (; b < 255 && before + hist[b] < need; ++b) before += hist[b];
      prefix = (want << 8) | unsigned(b);
      need -= before;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    st->kth_key = prefix;
    st->kth_state = 1;
  }
}

// The device select's k-th (radix_select over more complete objects than one block takes).
__global__ void k_fnra_take_select(const SelectState* sel, DevState* st) {
  st->kth_key = static_cast<std::uint32_t>(sel->prefix);
  st->kth_state = 1;
}

// The aggregate of the last scores read: what an object seen in no list may reach at most.
__host__ __device__ double t_agg(const AggSpec& a, const float* thr) {
  Acc t = acc_identity(a.kind);
  for (std::uint32_t i = 0; i < a.n; ++i) t = acc_combine(a.kind, t, acc_of(a, i, thr[i]));
  return acc_score(a, t);
}

// Once the k-th is known and no unseen object can beat it (by more than the error bound): are
// there objects seen in some lists but not all whose upper bound reaches the cut (they may still
// beat the k-th)? Counted a warp at a time into st->open, warps stopping once it is not 0 (a
// lower bound on their number then). Nothing to do otherwise.
__global__ void k_fnra_open(const std::uint32_t* words, std::uint64_t m, std::uint32_t full, AggSpec a, double error,
                            DevState* st) {
  __shared__ double tw[32];
  __shared__ double cut;
  __shared__ int go;
  if (threadIdx.x == 0) {
    go = 0;
    if (st->kth_state == 1) {
      const float kth = key32_score(st->kth_key);
      go = t_agg(a, st->thr) < approx_cut(kth, error / 2);
      cut = approx_cut(kth, error);
    }
  }
  for (std::uint32_t i = threadIdx.x; i < a.n; i += blockDim.x) tw[i] = agg_value(a, i, st->thr[i]);
  __syncthreads();
  if (!go) return;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  const std::uint64_t first = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  const auto* found = reinterpret_cast<volatile unsigned long long*>(&st->open);
  for (std::uint64_t base = first - (threadIdx.x & 31); base < m; base += stride) {
    const std::uint64_t id = base + (threadIdx.x & 31);
    bool open = false;
    if (id < m) {
      const std::uint32_t w = words[id];
      const std::uint32_t seen = packed_seen(w, a.n);
      open = seen != 0 && seen != full && approx_upper_bound(packed_part(w, a.n), seen, full, tw) >= cut;
    }
    const unsigned votes = __ballot_sync(0xffffffffu, open);
    if (votes && (threadIdx.x & 31) == 0) atomicAdd(&st->open, static_cast<unsigned long long>(__popc(votes)));
    // One open object decides the probe: the warp stops once any has been counted.
    if (__shfl_sync(0xffffffffu, (threadIdx.x & 31) == 0 ? *found : 0ull, 0) != 0) break;
  }
}

// Candidates: completed objects whose float aggregate reaches `cut`, listed and marked in `bits`.
__global__ void k_fnra_candidates(const std::uint32_t* completed, std::uint64_t count, const std::uint32_t* words,
                                  std::uint32_t n, float cut, std::uint32_t* ids, std::uint64_t cap,
                                  unsigned long long* n_out, std::uint32_t* bits) {
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < count;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t id = completed[q];
    if (!(packed_part(words[id], n) >= cut)) continue;
    const unsigned long long at = atomicAdd(n_out, 1ull);
    if (at < cap) ids[at] = id;
    atomicOr(&bits[id >> 5], 1u << (id & 31));
  }
}

// The candidates' exact aggregates, by reading the same list prefixes again (sorted access only).
__global__ void k_fnra_exact(const Entry* L, std::uint64_t m, std::uint32_t n, std::uint64_t depth, AggSpec a,
                             const std::uint32_t* bits, Slot* s) {
  const std::uint64_t total = depth * n;
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < total;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const auto i = static_cast<std::uint32_t>(q / depth);
    const Entry x = L[std::uint64_t(i) * m + q % depth];
    if (x.id < m && ((bits[x.id >> 5] >> (x.id & 31)) & 1u))
      atomic_combine(a.kind, &s[x.id].acc, acc_of(a, i, x.score));
  }
}

// The candidates' keys; their slots go back to the identity for the next query.
__global__ void k_fnra_keys(const std::uint32_t* ids, std::uint64_t count, Slot* s, AggSpec a, Acc ident, Key96* out) {
  for (std::uint64_t q = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; q < count;
       q += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t id = ids[q];
    out[q] = make_key(acc_score(a, s[id].acc), id);
    s[id] = Slot{ident, 0ull};
  }
}

template <class T>
void ensure(gpu::DeviceBuffer<T>& b, std::size_t n) {
  if (b.size() < n) {
    b = gpu::DeviceBuffer<T>();
    b = gpu::DeviceBuffer<T>(n);
  }
}

std::string where_gpu() {
  int dev = 0;
  cudaGetDevice(&dev);
  return gpu::format("gpu{}", dev);
}

}  // namespace

struct DeviceLists::Impl {
  std::uint32_t n{0};
  std::uint64_t m{0};
  Memory memory{Memory::device};
  gpu::DeviceBuffer<Entry> dev_entries;
  Entry* managed{nullptr};
  const Entry* L{nullptr};
  gpu::Stream stream;

  std::vector<float> max_abs;  // each list's largest |score| (the scale of exact sums)
  Estimate overlap;            // auto's estimate, from the host copy at upload
  gpu::DeviceBuffer<Slot> slots;
  bool slots_clean{false};
  Acc slots_ident{0, 0};
  gpu::DeviceBuffer<std::uint32_t> touched, cand_a, cand_b, completed;
  gpu::DeviceBuffer<Key96> merge_a, merge_b;
  gpu::DeviceBuffer<unsigned char> cub_temp;
  gpu::DeviceBuffer<double> acc;
  gpu::DeviceBuffer<float> approx;  // the scan's float aggregates
  gpu::DeviceBuffer<std::uint32_t> cand_ids;
  gpu::DeviceBuffer<float> by_id;              // score_index(): each list's scores by object id, built once
  gpu::DeviceBuffer<std::uint32_t> nra_words;  // the float NRA's state per object (packed_add)
  gpu::DeviceBuffer<std::uint32_t> cand_bits;  // the float NRA's candidates, a bit per object
  bool by_id_built{false};
  gpu::DeviceBuffer<DevState> state;
  gpu::DeviceBuffer<unsigned long long> hist;
  gpu::PinnedBuffer<DevState> host_state{1};
  gpu::PinnedBuffer<Key96> host_key{1};
  gpu::DeviceBuffer<SelectState> select;
  gpu::PinnedBuffer<SelectState> host_select{1};
  // The one-launch NRA: each list's leading run of top scores (from the host copy at upload), its
  // grid (one block per SM; 0 when no cooperative launch) and the largest table range a block
  // holds in shared memory, the table when it does not fit there, the inboxes and their counts,
  // per-block numbers, two sets of flags (each launch zeroes the other's) and the pinned status +
  // answer it writes.
  std::vector<std::uint64_t> top_run;
  int shallow_blocks{-1};
  std::size_t shallow_shared{0};   // bytes of dynamic shared memory a block may take
  std::size_t shallow_allowed{0};  // what the kernel was allowed so far
  gpu::DeviceBuffer<std::uint32_t> shallow_table;
  gpu::DeviceBuffer<uint4> shallow_inbox;
  gpu::DeviceBuffer<unsigned> shallow_sent;
  gpu::DeviceBuffer<Key96> shallow_comp, shallow_min;
  gpu::DeviceBuffer<unsigned> shallow_numbers;
  gpu::DeviceBuffer<ShallowFlags> shallow_flags;
  int shallow_parity{0};
  bool shallow_dirty{true};  // the counts or the flags may not be zero (new buffers, a failed launch)
  gpu::PinnedBuffer<Key96> host_shallow;
  Key96* host_shallow_dev{nullptr};  // host_shallow as the device sees it

  ~Impl() {
    if (managed) cudaFree(managed);
  }

  // Slots at {identity, 0} for this aggregate kind.
  void prepare_slots(Acc ident) {
    ensure(slots, m);
    if (!slots_clean || slots_ident.lo != ident.lo || slots_ident.hi != ident.hi) {
      k_init_slots<<<gpu::grid_for(m, kBlock, kGridCap), kBlock, 0, stream>>>(slots.data(), m, ident);
      TANDEM_CUDA_LAUNCH("k_init_slots");
      slots_ident = ident;
    }
    slots_clean = false;  // until the query resets what it touched
  }
  void reset_touched(std::uint64_t count) {
    if (count) {
      k_reset_slots<<<gpu::grid_for(count, kBlock, kGridCap), kBlock, 0, stream>>>(touched.data(), count, slots.data(),
                                                                                   m, slots_ident);
      TANDEM_CUDA_LAUNCH("k_reset_slots");
    }
    slots_clean = true;
  }
  void sort_keys(const Key96* in, Key96* out, std::uint64_t items) {
    std::size_t bytes = 0;
    TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, bytes, in, out, items, Key96Decomposer{}, 0, 96, stream.get()));
    ensure(cub_temp, bytes);
    TANDEM_CUDA(
        cub::DeviceRadixSort::SortKeys(cub_temp.data(), bytes, in, out, items, Key96Decomposer{}, 0, 96, stream.get()));
  }
  // Blocks of the one-launch NRA: one per SM (with the shared memory it may take); 0 when the
  // device cannot launch it.
  int shallow_grid() {
    if (shallow_blocks < 0) {
      int dev = 0, coop = 0, sms = 0, optin = 0;
      TANDEM_CUDA(cudaGetDevice(&dev));
      TANDEM_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
      TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
      TANDEM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
      cudaFuncAttributes fa{};
      TANDEM_CUDA(cudaFuncGetAttributes(&fa, nra_one_launch_kernel()));
      const std::size_t reserve = 1024;  // per block, for the runtime
      shallow_shared = std::size_t(optin) > fa.sharedSizeBytes + reserve ? optin - fa.sharedSizeBytes - reserve : 0;
      int per_sm = 0;
      TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nra_one_launch_kernel(), kShallowThreads, 0));
      shallow_blocks = coop && per_sm > 0 ? std::min(sms, kShallowThreads - 1) : 0;
    }
    return shallow_blocks;
  }
  void fetch_state() {
    TANDEM_CUDA(cudaMemcpyAsync(host_state.data(), state.data(), sizeof(DevState), cudaMemcpyDeviceToHost, stream));
    stream.sync();
  }
};

DeviceLists::DeviceLists(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceLists::~DeviceLists() = default;
std::uint32_t DeviceLists::n() const { return impl_->n; }
std::uint64_t DeviceLists::m() const { return impl_->m; }
Memory DeviceLists::memory() const { return impl_->memory; }
Estimate DeviceLists::overlap() const { return impl_->overlap; }
bool DeviceLists::indexed() const { return impl_->by_id_built; }

std::unique_ptr<DeviceLists> upload(const Lists& l, Memory memory, Report* rep) {
  gpu::require();
  check_shape(l);  // the kernels index n x m entries
  auto impl = std::make_unique<DeviceLists::Impl>();
  impl->n = l.n;
  impl->m = l.m;
  impl->memory = memory;
  impl->max_abs = list_max_abs(l);
  impl->overlap = estimate_overlap(l);
  impl->top_run = list_top_runs(l);
  const std::size_t bytes = l.entries.size() * sizeof(Entry);
  Stopwatch w;
  if (memory == Memory::managed) {
    const auto [free, total] = gpu::memory_info();
    const std::size_t margin = std::size_t{256} << 20;
    if (bytes + margin > free)
      throw OutOfMemoryError(gpu::format("managed memory for the lists: {} needed, {} free on the GPU (plus {} margin)",
                                         human_bytes(bytes), human_bytes(free), human_bytes(margin)));
    if (bytes) {
      void* p = nullptr;
      TANDEM_CUDA(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
      impl->managed = static_cast<Entry*>(p);
      parallel_copy(p, l.entries.data(), bytes);  // the host writes; pages move to the GPU when touched
    }
    impl->L = impl->managed;
  } else {
    impl->dev_entries = gpu::DeviceBuffer<Entry>(l.entries.size());
    if (bytes) copy_to_device(impl->dev_entries.data(), l.entries.data(), bytes, impl->stream);
    impl->L = impl->dev_entries.data();
  }
  impl->state = gpu::DeviceBuffer<DevState>(1);
  impl->hist = gpu::DeviceBuffer<unsigned long long>(kBins);
  impl->select = gpu::DeviceBuffer<SelectState>(1);
  TANDEM_CUDA(cudaMemsetAsync(impl->select.data(), 0, sizeof(SelectState), impl->stream));
  if (rep)
    rep->add(memory == Memory::managed ? "lists into managed memory" : "H2D lists", "cpu->" + where_gpu(), w.seconds(),
             human_bytes(bytes));
  return std::make_unique<DeviceLists>(std::move(impl));
}

namespace {

// The first `count` sorted keys on the device as (id, score) items.
std::vector<Item> download_items(DeviceLists::Impl& d, const Key96* keys, std::uint64_t count) {
  std::vector<Key96> h(count);
  if (count) TANDEM_CUDA(cudaMemcpyAsync(h.data(), keys, count * sizeof(Key96), cudaMemcpyDeviceToHost, d.stream));
  d.stream.sync();
  std::vector<Item> items;
  items.reserve(count);
  for (const auto& key : h) items.push_back(Item{key.id, key_score(key.hi)});
  return items;
}

// The running top k on the device (merge_a[0, top)), fed by entrants written right after it.
struct TopK {
  DeviceLists::Impl& d;
  std::uint64_t k;
  std::uint64_t top{0};
  Key96 kth{};
  bool full{false};

  // After a round: sorts top + entrants, keeps k, publishes the k-th to the device and the host.
  void merge(std::uint64_t entrants) {
    if (entrants == 0) return;
    const std::uint64_t items = top + entrants;
    if (items <= kSmallSort) {
      k_small_sort<<<1, kSmallThreads, 0, d.stream>>>(d.merge_a.data(), d.merge_b.data(), int(items));
      TANDEM_CUDA_LAUNCH("k_small_sort");
    } else {
      d.sort_keys(d.merge_a.data(), d.merge_b.data(), items);
    }
    std::swap(d.merge_a, d.merge_b);
    top = std::min(k, items);
    if (top == k) {
      k_set_kth<<<1, 1, 0, d.stream>>>(d.merge_a.data(), k, d.state.data());
      TANDEM_CUDA_LAUNCH("k_set_kth");
      TANDEM_CUDA(cudaMemcpyAsync(d.host_key.data(), d.merge_a.data() + (k - 1), sizeof(Key96), cudaMemcpyDeviceToHost,
                                  d.stream));
      d.stream.sync();
      kth = d.host_key[0];
      full = true;
    }
  }
  std::vector<Item> items() { return download_items(d, d.merge_a.data(), top); }
};

void prepare_common(DeviceLists::Impl& d, std::uint64_t k) {
  ensure(d.touched, d.m);
  ensure(d.completed, d.m);
  ensure(d.cand_a, d.m);
  ensure(d.cand_b, d.m);
  ensure(d.merge_a, k + d.m);
  ensure(d.merge_b, k + d.m);
  TANDEM_CUDA(cudaMemsetAsync(d.state.data(), 0, sizeof(DevState), d.stream));
}

}  // namespace

// What every GPU query starts from: the lists, the checked k, the aggregate and an empty result.
struct Query {
  DeviceLists::Impl& d;
  const std::uint32_t n;
  const std::uint64_t m;
  const AggSpec a;
  const std::string where;
  Result r;
};

static Query start_query(DeviceLists& dl, std::uint64_t k, const Aggregate& agg) {
  auto& d = detail::DeviceListsAccess::impl(dl);
  if (k < 1 || k > d.m) throw UsageError(gpu::format("k = {} must be between 1 and {}", k, d.m));
  Query q{d, d.n, d.m, spec_of(agg, d.n, d.max_abs), where_gpu(), {}};
  q.r.report.operation = "topk";
  return q;
}

// NRA on exact partial aggregates (24-byte slots), in rounds of `stride` levels read in every
// list: phase 1 until k fully known objects beat every unseen one, phase 2 pruning by upper bound.
static void nra_exact(Query& q, std::uint64_t k, const Options& opts) {
  auto& [d, n, m, a, where, r] = q;
  const unsigned long long full = full_mask(n);
  Stopwatch w;
  prepare_common(d, k);
  d.prepare_slots(acc_identity(a.kind));
  d.stream.sync();
  r.report.add("NRA init", where, w.seconds(), "state + buffers");

  TopK top{d, k};
  const bool adaptive = opts.stride == 0;
  const std::uint64_t floor = 4096;
  std::uint64_t stride = adaptive ? first_stride(k, floor) : opts.stride;
  r.stats.stride = stride;
  std::uint64_t dpt = 0, rounds = 0, rounds1 = 0, peak = 0, cands = 0, touched = 0;
  bool phase2 = false, done = false, pruned_once = false;
  double t1 = 0, t2 = 0;
  while (!done) {
    if (opts.max_depth && dpt >= opts.max_depth) break;
    std::uint64_t e = std::min(m, dpt + stride);
    if (opts.max_depth) e = std::min(e, std::max(opts.max_depth, dpt + 1));
    const std::uint64_t width = e - dpt;
    const bool in_phase2 = phase2;
    w.reset();
    TANDEM_CUDA(cudaMemsetAsync(&d.state.data()->completed, 0, 2 * sizeof(unsigned long long), d.stream));
    k_nra_scatter<<<gpu::grid_for(width * n, kBlock, kGridCap), kBlock, 0, d.stream>>>(
        d.L, m, n, dpt, width, a, d.slots.data(), full, in_phase2, d.touched.data(), d.completed.data(),
        d.state.data());
    TANDEM_CUDA_LAUNCH("k_nra_scatter");
    k_nra_entrants<<<gpu::grid_for(std::min(m, width * n), kBlock, kGridCap), kBlock, 0, d.stream>>>(
        d.completed.data(), d.slots.data(), a.kind, a.scale, d.state.data(), d.merge_a.data() + top.top);
    TANDEM_CUDA_LAUNCH("k_nra_entrants");
    d.fetch_state();
    const DevState st = d.host_state[0];
    touched = st.touched;
    top.merge(st.entrants);
    dpt = e;
    ++rounds;
    if (dpt == m) {
      done = true;
    } else if (top.full) {
      if (!phase2 && !unseen_may_beat(t_agg(a, st.thr), top.kth)) phase2 = true;
      if (phase2) {
        const std::uint32_t* in = pruned_once ? d.cand_a.data() : d.touched.data();
        const std::uint64_t count = pruned_once ? cands : touched;
        TANDEM_CUDA(cudaMemsetAsync(&d.state.data()->remaining, 0, sizeof(unsigned long long), d.stream));
        if (count) {
          k_nra_prune<<<gpu::grid_for(count, kBlock, kGridCap), kBlock, 0, d.stream>>>(
              in, count, d.slots.data(), a, full, d.state.data(), d.cand_b.data());
          TANDEM_CUDA_LAUNCH("k_nra_prune");
        }
        d.fetch_state();
        cands = d.host_state[0].remaining;
        std::swap(d.cand_a, d.cand_b);
        pruned_once = true;
        done = cands == 0;
      }
    }
    peak = std::max(peak, pruned_once ? cands : touched);
    (in_phase2 ? t2 : t1) += w.seconds();
    rounds1 += !in_phase2;
    if (adaptive) stride = next_stride(stride, dpt, phase2, floor);
  }
  w.reset();
  if (done) r.items = top.items();
  d.reset_touched(touched);
  d.stream.sync();
  r.report.add("NRA phase 1 (collect candidates)", where, t1, gpu::format("{} rounds", rounds1));
  r.report.add("NRA phase 2 (upper bounds only)", where, t2, gpu::format("{} rounds", rounds - rounds1));
  r.report.add("results D2H + state reset", where, w.seconds(), gpu::format("{} objects touched", touched));
  finish(r, "nra", where, n, m, dpt, peak, rounds, adaptive, done);
}

// Each list's scores by object id (n x m floats), built on the first query that needs it (TA, the
// scan) and kept with the lists.
static const float* score_index(Query& q) {
  auto& d = q.d;
  if (!d.by_id_built) {
    Stopwatch w;
    ensure(d.by_id, std::size_t(q.n) * q.m);
    k_score_index<<<gpu::grid_for(std::uint64_t(q.n) * q.m, kBlock, kGridCap), kBlock, 0, d.stream>>>(d.L, q.m, q.n,
                                                                                                      d.by_id.data());
    TANDEM_CUDA_LAUNCH("k_score_index");
    d.stream.sync();
    d.by_id_built = true;
    q.r.report.add("index build (score by id in each list; once per upload)", q.where, w.seconds(),
                   human_bytes(std::uint64_t(q.n) * q.m * sizeof(float)));
  }
  return d.by_id.data();
}

Result ta_gpu(DeviceLists& dl, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  auto q = start_query(dl, k, agg);
  auto& [d, n, m, a, where, r] = q;
  score_index(q);
  Stopwatch w;
  prepare_common(d, k);
  d.prepare_slots(acc_identity(kSum));
  TopK top{d, k};
  const bool adaptive = opts.stride == 0;
  const std::uint64_t floor = 4096;
  std::uint64_t stride = adaptive ? first_stride(k, floor) : opts.stride;
  r.stats.stride = stride;
  std::uint64_t dpt = 0, rounds = 0, touched = 0;
  bool done = false;
  while (!done) {
    if (opts.max_depth && dpt >= opts.max_depth) break;
    std::uint64_t e = std::min(m, dpt + stride);
    if (opts.max_depth) e = std::min(e, std::max(opts.max_depth, dpt + 1));
    const std::uint64_t width = e - dpt;
    TANDEM_CUDA(cudaMemsetAsync(&d.state.data()->completed, 0, 2 * sizeof(unsigned long long), d.stream));
    k_ta_round<<<gpu::grid_for(width * n, kBlock, kGridCap), kBlock, 0, d.stream>>>(
        d.L, m, n, dpt, width, a, d.by_id.data(), d.slots.data(), d.touched.data(), d.state.data(),
        d.merge_a.data() + top.top);
    TANDEM_CUDA_LAUNCH("k_ta_round");
    d.fetch_state();
    const DevState st = d.host_state[0];
    touched = st.touched;
    top.merge(st.entrants);
    dpt = e;
    ++rounds;
    done = dpt == m || (top.full && !unseen_may_beat(t_agg(a, st.thr), top.kth));
    if (adaptive) stride = std::max(stride * 2, floor);
  }
  if (done) r.items = top.items();
  d.reset_touched(touched);
  d.stream.sync();
  r.report.add("TA sorted + random access", where, w.seconds(),
               gpu::format("{} rounds, {} objects scored", rounds, touched));
  finish(r, "ta", where, n, m, dpt, touched, rounds, adaptive, done);
  return std::move(q.r);
}

namespace {

// Radix select over m scores (double or float) on the device, kDigitBits at a time down to the
// last key bit: the state (d.select) ends on the k-th best key. Returns the passes run.
template <class T>
int radix_select(DeviceLists::Impl& d, const T* vals, std::uint64_t m, std::uint64_t k) {
  constexpr int kKeyBits = 8 * sizeof(T);
  TANDEM_CUDA(cudaMemsetAsync(d.select.data(), 0, sizeof(SelectState), d.stream));
  int passes = 0;
  for (int bits = 0, width = 0; bits < kKeyBits; bits += width, ++passes) {
    width = std::min(kDigitBits, kKeyBits - bits);
    TANDEM_CUDA(cudaMemsetAsync(d.hist.data(), 0, kBins * sizeof(unsigned long long), d.stream));
    k_select_hist<T>
        <<<gpu::grid_for(m, kBlock, 132 * 8), kBlock, 0, d.stream>>>(vals, m, d.select.data(), width, d.hist.data());
    TANDEM_CUDA_LAUNCH("k_select_hist");
    k_select_pick<<<1, kPickThreads, 0, d.stream>>>(d.hist.data(), width, k, d.select.data());
    TANDEM_CUDA_LAUNCH("k_select_pick");
  }
  return passes;
}

// The select's state on the host (one round trip; the stream's work so far is done after it).
SelectState read_select(DeviceLists::Impl& d) {
  TANDEM_CUDA(
      cudaMemcpyAsync(d.host_select.data(), d.select.data(), sizeof(SelectState), cudaMemcpyDeviceToHost, d.stream));
  d.stream.sync();
  const SelectState st = d.host_select[0];
  if (st.lost) throw Error("top-k scan: radix select lost objects (internal error)");
  return st;
}

// Sorts `count` keys (merge_a -> merge_b) and returns the first k as items.
std::vector<Item> best_keys(DeviceLists::Impl& d, std::uint64_t count, std::uint64_t k) {
  if (count <= kSmallSort) {
    k_small_sort<<<1, kSmallThreads, 0, d.stream>>>(d.merge_a.data(), d.merge_b.data(), int(count));
    TANDEM_CUDA_LAUNCH("k_small_sort");
  } else {
    d.sort_keys(d.merge_a.data(), d.merge_b.data(), count);
  }
  return download_items(d, d.merge_b.data(), k);
}

}  // namespace

// The scan by exact scores of every object (in registers, from the index), then a radix select on
// the 64-bit score keys.
static void scan_exact(Query& q, std::uint64_t k, const float* ix) {
  auto& [d, n, m, a, where, r] = q;
  ensure(d.acc, m);
  gpu::Event e0, e1, e2;
  e0.record(d.stream);
  k_dense_exact<<<gpu::grid_for(m, kBlock, kGridCap), kBlock, 0, d.stream>>>(ix, m, a, d.acc.data());
  TANDEM_CUDA_LAUNCH("k_dense_exact");
  e1.record(d.stream);
  const int passes = radix_select(d, d.acc.data(), m, k);
  const SelectState s = read_select(d);
  const std::uint64_t count = s.less + s.eq;
  ensure(d.merge_a, count);
  ensure(d.merge_b, count);
  k_select_compact<<<gpu::grid_for(m, kBlock, kGridCap), kBlock, 0, d.stream>>>(
      d.acc.data(), m, d.select.data(), d.merge_a.data(), count, &d.select.data()->count);
  TANDEM_CUDA_LAUNCH("k_select_compact");
  const unsigned long long got = read_select(d).count;
  if (got != count)
    throw Error(gpu::format("top-k scan: select kept {} objects, expected {} (internal error)", got, count));
  r.items = best_keys(d, count, k);
  e2.record(d.stream);
  e2.sync();
  r.report.add("exact score of every object", where, e1.seconds_since(e0), gpu::format("{} lists x {} objects", n, m));
  r.report.add("radix select + sort", where, e2.seconds_since(e1),
               gpu::format("{} passes, {} objects sorted", passes, count));
  finish(r, "scan", where, n, m, m, count, std::uint64_t(passes), false, true);
}

// The filtered scan: every object's float aggregate (4 bytes each: the array stays in L2), a radix
// select on them, then exact scores of the candidates only, the objects within twice the float's
// error bound of the k-th float aggregate (every object of the exact top k is one). False, with a
// note (and the filter's time) in q.r, when the bound is useless or too many objects are near the
// k-th (ties): scan_exact then answers.
static bool scan_filtered(Query& q, std::uint64_t k, const float* ix) {
  auto& [d, n, m, a, where, r] = q;
  const double error = approx_error(a, d.max_abs);
  if (!std::isfinite(error)) {
    r.report.note("scan: float aggregates could overflow; every object scored exactly");
    return false;
  }
  ensure(d.approx, m);
  gpu::Event e0, e1, e2, e3;
  e0.record(d.stream);
  k_dense_approx<<<gpu::grid_for(m, kBlock, kGridCap), kBlock, 0, d.stream>>>(ix, m, a, d.approx.data());
  TANDEM_CUDA_LAUNCH("k_dense_approx");
  e1.record(d.stream);
  const int passes = radix_select(d, d.approx.data(), m, k);
  const std::uint64_t cap = std::min(m, std::max<std::uint64_t>(16 * k, 1 << 16));
  ensure(d.cand_ids, cap);
  ensure(d.merge_a, cap);
  ensure(d.merge_b, cap);
  k_approx_candidates<<<gpu::grid_for(m, kBlock, kGridCap), kBlock, 0, d.stream>>>(
      d.approx.data(), m, d.select.data(), error, d.cand_ids.data(), cap, &d.select.data()->count);
  TANDEM_CUDA_LAUNCH("k_approx_candidates");
  const unsigned long long count = read_select(d).count;
  e2.record(d.stream);
  if (count > cap) {
    e2.sync();
    r.report.add("float aggregate + select (filter not used)", where, e2.seconds_since(e0),
                 gpu::format("{} candidates", count));
    r.report.note(
        gpu::format("scan: {} objects within the float error bound of the k-th (more than {}); every "
                    "object scored exactly",
                    count, cap));
    return false;
  }
  if (count < k) throw Error(gpu::format("top-k scan: {} candidates for k = {} (internal error)", count, k));
  k_candidate_keys<<<gpu::grid_for(count, kBlock, kGridCap), kBlock, 0, d.stream>>>(d.cand_ids.data(), count, ix, m, a,
                                                                                    d.merge_a.data());
  TANDEM_CUDA_LAUNCH("k_candidate_keys");
  r.items = best_keys(d, count, k);
  e3.record(d.stream);
  e3.sync();
  r.report.add("float aggregate of every object", where, e1.seconds_since(e0),
               gpu::format("{} lists x {} objects", n, m));
  r.report.add("radix select on the floats + candidates", where, e2.seconds_since(e1),
               gpu::format("{} passes; {} candidates within {} of the k-th", passes, count, 2 * error));
  r.report.add("exact scores of the candidates + sort", where, e3.seconds_since(e2), gpu::format("{} objects", count));
  finish(r, "scan", where, n, m, m, count, std::uint64_t(passes), false, true);
  return true;
}

Result scan_gpu(DeviceLists& dl, std::uint64_t k, const Aggregate& agg, const Options&) {
  auto q = start_query(dl, k, agg);
  const float* ix = score_index(q);
  if (!scan_filtered(q, k, ix)) scan_exact(q, k, ix);
  return std::move(q.r);
}

// NRA on float partial aggregates, for sums and weighted sums over at most 8 lists that are not
// correlated: one 32-bit word per object (lists seen, float partial: packed_add), list prefixes
// read to depths probed 1.5x deeper each time until k objects seen everywhere beat, by more than the float's error
// bound, every object seen nowhere (the aggregate of the last scores read) and every upper bound of the objects seen in
// some lists; then the candidates within twice the bound of the k-th float get their exact
// aggregates by reading the same prefixes again (sorted access only). False, with a note when the
// float cannot decide, and the exact NRA answers.
static bool nra_float(Query& q, std::uint64_t k) {
  auto& [d, n, m, a, where, r] = q;
  if (!is_sum(a.kind) || n > kPackedMaxLists) return false;
  // Twice the packed partials' bound: the upper bounds also add n doubles.
  const double error = 2 * packed_error(approx_error(a, d.max_abs), n);
  if (!std::isfinite(error)) {
    r.report.note("nra: float partial aggregates could overflow; exact partial aggregates used");
    return false;
  }
  gpu::Event e0, e1, e2, p0, p1, p2;
  e0.record(d.stream);
  prepare_common(d, k);
  ensure(d.nra_words, m);
  TANDEM_CUDA(cudaMemsetAsync(d.nra_words.data(), 0, m * sizeof(std::uint32_t), d.stream));
  const auto full = static_cast<std::uint32_t>(full_mask(n));
  std::uint64_t depth = 0, probes = 0, completed = 0, open_passes = 0, many = 0;
  float kth = 0;
  double t_scatter = 0, t_tests = 0;
  DevState* dst = d.state.data();
  auto open_pass = [&] {
    k_fnra_open<<<gpu::grid_for(m, kBlock, 132 * 8), kBlock, 0, d.stream>>>(d.nra_words.data(), m, full, a, error, dst);
    TANDEM_CUDA_LAUNCH("k_fnra_open");
  };
  // One probe: read the lists down to `next`, select the k-th complete object and run the stop
  // tests on the device, then one read back; true when the answer is known.
  auto probe = [&](std::uint64_t next) {
    const std::uint64_t width = next - depth;
    TANDEM_CUDA(cudaMemsetAsync(&dst->open, 0, sizeof(unsigned long long) + 2 * sizeof(std::uint32_t), d.stream));
    p0.record(d.stream);
    k_fnra_scatter<<<gpu::grid_for(width * n, kBlock, kGridCap), kBlock, 0, d.stream>>>(
        d.L, m, n, depth, width, a, d.nra_words.data(), full, d.completed.data(), dst);
    TANDEM_CUDA_LAUNCH("k_fnra_scatter");
    p1.record(d.stream);
    k_fnra_block_select<<<1, kBlockSelectThreads, 0, d.stream>>>(d.completed.data(), d.nra_words.data(), n, k, dst);
    TANDEM_CUDA_LAUNCH("k_fnra_block_select");
    open_pass();
    p2.record(d.stream);
    d.fetch_state();
    depth = next;
    ++probes;
    DevState st = d.host_state[0];
    if (st.kth_state == 2) {  // too many complete objects for one block: the device-wide select
      ++many;
      ensure(d.approx, st.completed);
      k_fnra_gather<<<gpu::grid_for(st.completed, kBlock, kGridCap), kBlock, 0, d.stream>>>(
          d.completed.data(), st.completed, d.nra_words.data(), n, d.approx.data());
      TANDEM_CUDA_LAUNCH("k_fnra_gather");
      radix_select(d, d.approx.data(), st.completed, k);
      k_fnra_take_select<<<1, 1, 0, d.stream>>>(d.select.data(), dst);
      TANDEM_CUDA_LAUNCH("k_fnra_take_select");
      open_pass();
      p2.record(d.stream);
      d.fetch_state();
      st = d.host_state[0];
    }
    t_scatter += p1.seconds_since(p0);
    t_tests += p2.seconds_since(p1);
    completed = st.completed;
    if (st.kth_state != 1) {
      if (depth == m)
        throw Error(gpu::format("top-k NRA: {} objects complete at full depth, k = {} (internal error)", completed, k));
      return false;
    }
    kth = key32_score(st.kth_key);
    if (depth == m) return true;                                         // every object is complete
    if (!(t_agg(a, st.thr) < approx_cut(kth, error / 2))) return false;  // an unseen object may beat the k-th
    ++open_passes;
    return st.open == 0;
  };
  for (std::uint64_t next = nra_first_depth(m, n, k, 4096); !probe(next);)
    next = nra_next_depth(depth, m, completed, k);
  e1.record(d.stream);
  const float cut = approx_cut(kth, error);
  const std::uint64_t cap = std::min(m, std::max<std::uint64_t>(16 * k, 1 << 16));
  ensure(d.cand_ids, cap);
  ensure(d.cand_bits, m / 32 + 1);
  TANDEM_CUDA(cudaMemsetAsync(d.cand_bits.data(), 0, (m / 32 + 1) * sizeof(std::uint32_t), d.stream));
  TANDEM_CUDA(cudaMemsetAsync(d.select.data(), 0, sizeof(SelectState), d.stream));  // the count, and no stale `lost`
  k_fnra_candidates<<<gpu::grid_for(completed, kBlock, kGridCap), kBlock, 0, d.stream>>>(
      d.completed.data(), completed, d.nra_words.data(), n, cut, d.cand_ids.data(), cap, &d.select.data()->count,
      d.cand_bits.data());
  TANDEM_CUDA_LAUNCH("k_fnra_candidates");
  const unsigned long long count = read_select(d).count;
  if (count > cap) {
    e2.record(d.stream);
    e2.sync();
    r.report.add("NRA probes (float partial aggregates, not used)", where, e2.seconds_since(e0),
                 gpu::format("{} probes, {} levels of each list, {} candidates", probes, depth, count));
    r.report.note(gpu::format(
        "nra: {} objects within the float error bound of the k-th (more than {}); exact partial aggregates used", count,
        cap));
    return false;
  }
  if (count < k) throw Error(gpu::format("top-k NRA: {} candidates for k = {} (internal error)", count, k));
  const Acc ident = acc_identity(a.kind);
  d.prepare_slots(ident);
  k_fnra_exact<<<gpu::grid_for(depth * n, kBlock, kGridCap), kBlock, 0, d.stream>>>(d.L, m, n, depth, a,
                                                                                    d.cand_bits.data(), d.slots.data());
  TANDEM_CUDA_LAUNCH("k_fnra_exact");
  k_fnra_keys<<<gpu::grid_for(count, kBlock, kGridCap), kBlock, 0, d.stream>>>(d.cand_ids.data(), count, d.slots.data(),
                                                                               a, ident, d.merge_a.data());
  TANDEM_CUDA_LAUNCH("k_fnra_keys");
  d.slots_clean = true;  // the keys kernel put back every slot the exact pass touched
  r.items = best_keys(d, count, k);
  e2.record(d.stream);
  e2.sync();
  const double t_probes = e1.seconds_since(e0);
  r.report.add("NRA state clear + first set-up", where, t_probes - t_scatter - t_tests,
               human_bytes(m * sizeof(std::uint32_t)));
  r.report.add("NRA probes: list prefixes into float partial aggregates", where, t_scatter,
               gpu::format("{} probes, {} levels of each list, {} objects complete", probes, depth, completed));
  r.report.add("NRA probes: select the k-th complete + stop tests", where, t_tests,
               gpu::format("{} upper-bound passes over the objects; {} device-wide selects", open_passes, many));
  r.report.add("NRA candidates' exact aggregates (prefixes read again) + sort", where, e2.seconds_since(e1),
               gpu::format("{} candidates within {} of the k-th", count, 2 * error));
  finish(r, "nra", where, n, m, depth, count, probes, true, true);
  return true;
}

enum class Shallow { answered, not_run, gave_up };

// NRA in one launch (k_nra_shallow): the rounds, the stop test and the top k on the device; the
// host polls the status the kernel writes into pinned memory (cheaper than a copy back and a
// stream synchronisation). not_run when the device has no cooperative
// launch, there are more lists than kShallowMaxLists, the table would be too large, or a depth cap
// (opts.max_depth) lies inside its budget; gave_up (a note in q.r) when NRA does not stop within
// the budget or the table fills up.
static Shallow nra_shallow(Query& q, std::uint64_t k, std::uint64_t max_depth) {
  auto& [d, n, m, a, where, r] = q;
  if (n > kShallowMaxLists) return Shallow::not_run;
  const std::uint64_t first = shallow_first_depth(a, d.top_run, m, k, kShallowFloor);
  const std::uint64_t budget = shallow_budget(m, first), entries = table_entries(n, first);
  if ((max_depth && max_depth < budget) || entries > kShallowMaxEntries) return Shallow::not_run;
  const int blocks = d.shallow_grid();
  if (blocks == 0) {
    r.report.note("nra: this GPU cannot launch a cooperative grid; NRA runs in host-driven rounds");
    return Shallow::not_run;
  }
  Stopwatch w;
  const auto g = std::size_t(blocks);
  const std::uint64_t range = (entries + g - 1) / g;  // each block's part of the table
  const std::size_t table_bytes = range * (1 + n) * sizeof(std::uint32_t);
  const bool in_shared = table_bytes <= d.shallow_shared;
  if (in_shared && table_bytes > d.shallow_allowed) {
    gpu::allow_dynamic_shared(nra_one_launch_kernel(), table_bytes);
    d.shallow_allowed = table_bytes;
  }
  if (!in_shared) ensure(d.shallow_table, g * range * (1 + n));
  // A round sends at most n x budget entries, spread evenly over the blocks by the hash: twice
  // that share, and room for small rounds.
  const std::uint64_t box = 2 * ((std::uint64_t(n) * budget + g - 1) / g) + 1024;
  ensure(d.shallow_inbox, g * box);
  if (d.shallow_sent.size() < g) {
    ensure(d.shallow_sent, g);
    d.shallow_dirty = true;
  }
  if (d.host_shallow.size() < 2 + kShallowRankMax) {
    d.host_shallow = gpu::PinnedBuffer<Key96>();
    d.host_shallow = gpu::PinnedBuffer<Key96>(2 + kShallowRankMax);
    void* dev = nullptr;
    TANDEM_CUDA(cudaHostGetDevicePointer(&dev, d.host_shallow.data(), 0));
    d.host_shallow_dev = static_cast<Key96*>(dev);
  }
  if (d.shallow_flags.size() < 2) {
    d.shallow_flags = gpu::DeviceBuffer<ShallowFlags>(2);
    d.shallow_dirty = true;
  }
  if (d.shallow_dirty) {
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_sent.data(), 0, d.shallow_sent.bytes(), d.stream));
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_flags.data(), 0, d.shallow_flags.bytes(), d.stream));
    d.shallow_parity = 0;
  }
  ensure(d.shallow_comp, g * range);
  ensure(d.shallow_min, g);
  ensure(d.merge_a, g * range);
  ensure(d.merge_b, g * range);
  const std::size_t row = (g + 3) / 4 * 4, at = (5 * g + 3) / 4 * 4;
  if (d.shallow_numbers.size() < at + kShallowSamples * row) {
    ensure(d.shallow_numbers, at + kShallowSamples * row);
    // The rows' padding past the last block stays zero.
    TANDEM_CUDA(cudaMemsetAsync(d.shallow_numbers.data(), 0, d.shallow_numbers.bytes(), d.stream));
  }
  auto* status = reinterpret_cast<volatile unsigned*>(d.host_shallow.data());
  *status = 0;
  unsigned* numbers = d.shallow_numbers.data();
  ShallowFlags* flags = d.shallow_flags.data();
  const ShallowArgs args{d.L,
                         m,
                         n,
                         a,
                         unit_inverse(a.scale),
                         range,
                         in_shared ? nullptr : d.shallow_table.data(),
                         d.shallow_inbox.data(),
                         box,
                         d.shallow_sent.data(),
                         k,
                         first,
                         budget,
                         kShallowFloor,
                         d.shallow_comp.data(),
                         d.merge_b.data(),
                         d.merge_a.data(),
                         d.shallow_min.data(),
                         BlockNumbers{numbers, numbers + g, numbers + 2 * g, numbers + 3 * g, numbers + 4 * g,
                                      numbers + at, unsigned(row)},
                         flags + d.shallow_parity,
                         flags + (1 - d.shallow_parity),
                         d.host_shallow_dev};
  void* params[] = {const_cast<ShallowArgs*>(&args)};
  d.shallow_dirty = true;  // until the kernel has answered
  TANDEM_CUDA(cudaLaunchCooperativeKernel(nra_one_launch_kernel(), dim3(unsigned(blocks)), dim3(kShallowThreads),
                                          params, in_shared ? table_bytes : 0, d.stream));
  // The status is the kernel's last write; a kernel that ends without one failed.
  for (unsigned spin = 1; *status == 0; ++spin) {
    if (spin % 256) continue;
    const cudaError_t e = cudaStreamQuery(d.stream);
    if (e == cudaErrorNotReady || *status != 0) continue;
    TANDEM_CUDA(e);
    throw Error("top-k NRA in one launch: the kernel ended without a status (internal error)");
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  ShallowStatus st;
  std::memcpy(&st, d.host_shallow.data(), sizeof st);
  d.shallow_parity = 1 - d.shallow_parity;
  d.shallow_dirty = false;
  r.stats.stride = first;
  if (st.state == kShallowGaveUp) {
    r.report.add("NRA in one launch (gave up)", where, w.seconds(),
                 gpu::format("{} rounds, {} levels of each list", st.rounds, st.depth));
    r.report.note(st.cap ? gpu::format("nra: NRA in one launch did not stop before its table of {} objects filled "
                                       "up (the stop is deeper); the other NRA paths answer",
                                       g * range)
                         : gpu::format("nra: NRA in one launch did not stop within its budget of {} levels (the stop "
                                       "is deeper); the other NRA paths answer",
                                       budget));
    return Shallow::gave_up;
  }
  if (st.state == kShallowAnswer) {
    r.items.resize(k);
    const Key96* keys = d.host_shallow.data() + 2;
    for (std::uint64_t i = 0; i < k; ++i) r.items[i] = Item{keys[i].id, key_score(keys[i].hi)};
  } else if (st.state == kShallowHostSort) {
    r.items = best_keys(d, st.complete, k);  // every complete object's key is in merge_a
  } else {
    throw Error(gpu::format("top-k NRA in one launch: state {} (internal error)", st.state));
  }
  // std::to_string: this path's whole budget is tens of microseconds.
  r.report.add("NRA in one launch: rounds, stop tests and the top k on the device", where, w.seconds(),
               std::to_string(st.rounds) + " rounds, " + std::to_string(st.depth) + " levels of each list; " +
                   std::to_string(st.complete) + " complete objects, " +
                   (st.state == kShallowAnswer ? std::to_string(st.ranked) + " ranked in one block" : "sorted"));
  finish(r, "nra", where, n, m, st.depth, st.complete, std::uint64_t(st.rounds), true, true);
  return Shallow::answered;
}

Result nra_gpu(DeviceLists& dl, std::uint64_t k, const Aggregate& agg, const Options& opts) {
  auto q = start_query(dl, k, agg);
  // Correlated lists (and a single list) stop within a few levels: NRA in one launch answers
  // without a host round trip per round (10M x 4 on an H100: 0.08 ms, the host-driven rounds 0.33
  // ms, the scan 0.39 ms). Elsewhere, or past its budget, the float NRA reads deep prefixes faster
  // than the exact NRA's rounds.
  const bool correlated = q.d.overlap.ratio() > kCorrelatedRatio;
  Shallow shallow = Shallow::not_run;
  if (opts.stride == 0 && (correlated || q.n == 1)) {
    shallow = nra_shallow(q, k, opts.max_depth);
    if (shallow == Shallow::answered) return std::move(q.r);
  }
  if (opts.stride == 0 && opts.max_depth == 0 && (!correlated || shallow == Shallow::gave_up) && nra_float(q, k))
    return std::move(q.r);
  nra_exact(q, k, opts);
  return std::move(q.r);
}

}  // namespace tandem::topk
