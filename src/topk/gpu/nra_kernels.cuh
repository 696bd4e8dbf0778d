// The kernels of NRA's host-driven rounds (exact slots, packed float words); only nra.cu includes this.
#pragma once
#include <cstdint>

#include "topk/gpu/device.cuh"

namespace tandem::topk::detail {
namespace {

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
}  // namespace
}  // namespace tandem::topk::detail
