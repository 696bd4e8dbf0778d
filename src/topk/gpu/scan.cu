// The GPU scan: every object's score from the index, the k best by radix select, float-filtered where it can.
#include <algorithm>
#include <cmath>

#include "tandem/core/error.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/stream.hpp"
#include "topk/gpu/lists.cuh"

namespace tandem::topk {

using namespace detail;

namespace {

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

}  // namespace tandem::topk
