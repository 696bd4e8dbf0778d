// TA on the GPU: sorted access in batches, random access to the score index, and when to stop.
#include <algorithm>

#include "tandem/core/timing.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "topk/gpu/lists.cuh"

namespace tandem::topk {

using namespace detail;

namespace {

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

}  // namespace

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

}  // namespace tandem::topk
