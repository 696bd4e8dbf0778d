// Host data through the GPU (CUDA builds only): the staged pipeline with an MSD split for data
// that fits, a host MSD partition into GPU-sized pieces for data that does not, and the
// device-resident API.
//
// Floor, 2^28 u32 (1 GiB) from a pageable std::vector: the bytes must cross host memory twice
// each way (user buffer <-> pinned slot, by CPU threads at ~40-50 GB/s) and PCIe once each way
// (~55 GB/s pinned), so the staged round trip with no sort (~41-43 ms on an H100 box) is the
// floor. The CUB sort takes ~6.4 ms on an H100; run between the upload and the D2H it adds ~15%.
// What stays in front of the first D2H byte: keys-only uploads are partitioned on the top digit
// batch by batch while the upload runs, so only the last batch's pass, one group's gather and
// its sort (~0.5 ms) remain; the other groups sort while the D2H copy drains. The naive path
// (thrust::device_vector from the vector, plain pageable cudaMemcpy) is ~240 ms.
#include "sort/device_sort.hpp"

#if TANDEM_HAS_CUDA
#include <algorithm>
#include <array>
#include <climits>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sort/msd.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"

namespace tandem {
namespace detail {
namespace {

// Times of the fit path's stages, summed over pieces out of core.
struct StageTimes {
  double h2d{0};           // wall: staged H2D + key mapping + top-digit histogram, per chunk
  double exposed{0};       // device: from the last chunk's arrival to the first group sorted
  double msd{0};           // device: the MSD pass on the top 8 bits
  double groups{0};        // device: the sorts of the groups (or the whole-array sort)
  double setup{0};         // wall: histogram readback, plan, enqueueing the sorts (host)
  std::size_t batches{0};  // upload batches partitioned on the top digit during the upload (0: none)
  double d2h{0};           // wall: the D2H copies, overlapping the remaining group sorts
  double d2h_wait{0};      // wall: of d2h, the host waiting for a staged chunk's DMA (and its sort)
  double d2h_copy{0};      // wall: of d2h, the host copying staged chunks out of the pinned slots
  std::size_t split_pieces{0}, whole_pieces{0}, groups_n{0};
  std::string why;  // the split decision of the last (largest) piece
};

TransferOptions transfer_options(const SortOptions& opts) {
  TransferOptions to = calibrated_transfer_options();
  // Chunks stay multiples of 4 KiB, so each holds whole keys for the per-chunk mapping kernel.
  to.chunk_bytes = std::max<std::size_t>(std::size_t{1} << 20, to.chunk_bytes / 4096 * 4096);
  if (const std::size_t chunk = opts.gpu_tuning.pipeline_chunk_bytes)
    to.chunk_bytes = std::max<std::size_t>(4096, chunk / 4096 * 4096);
  if (to.threads <= 0) to.threads = std::min(16, default_threads());
  to.slots = std::max(2, to.slots);
  return to;
}

// One device-to-host copy that may start once `ready` has completed on the device; `ready` is
// recorded by the time prepare(group) returns (see copy_back).
struct D2HPiece {
  const char* src;
  char* dst;
  std::size_t bytes;
  cudaEvent_t ready;
  std::size_t group{0};
};

// The pinned slots of the staged D2H copies, kept in the workspace.
void ensure_slots(SortWorkspace& ws, const TransferOptions& to) {
  const std::size_t S = static_cast<std::size_t>(to.slots);
  if (ws.d2h_slots.size() == S && ws.d2h_slots.front().size() == to.chunk_bytes) return;
  ws.d2h_slots.clear();
  ws.d2h_done.clear();
  for (std::size_t i = 0; i < S; ++i) {
    ws.d2h_slots.emplace_back(to.chunk_bytes);
    ws.d2h_done.emplace_back(false);
  }
}

// Keys-only uploads are cut into up to this many batches of whole chunks; each batch is
// partitioned on the top digit as soon as it has arrived, so the MSD pass hides behind the upload.
constexpr std::size_t kMaxUploadBatches = kMaxGatherSegments;

// The digit histograms of the upload (one set per upload batch), on the device and for reading
// them on the host.
void ensure_hist(SortWorkspace& ws) {
  constexpr std::size_t kMax = 8 * kMsdBuckets * kMaxUploadBatches;
  if (!ws.hist.data()) ws.hist = gpu::DeviceBuffer<unsigned long long>(kMax);
  if (!ws.hist_host.data()) ws.hist_host = gpu::PinnedBuffer<unsigned long long>(kMax);
}

// Allocates what fit_sort needs for pieces of up to m elements, so an out-of-memory error comes
// before the out-of-core path has moved any of the caller's data.
template <class K, class V>
void reserve_fit(SortWorkspace& ws, std::size_t m, const SortOptions& opts) {
  const bool merge = opts.algorithm == SortAlgorithm::merge;
  using U = ordered_bits_t<K>;
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  constexpr int kBits = static_cast<int>(sizeof(U)) * 8;
  grow(ws.keys, m * sizeof(K));
  if constexpr (kValues) grow(ws.values, m * sizeof(V));
  if (!merge) {
    grow(ws.alt_keys, m * sizeof(U));
    if constexpr (kValues) grow(ws.alt_values, m * sizeof(V));
    grow(ws.temp, std::max({radix_temp_bytes<U, V>(m, 0, kBits), radix_temp_bytes<U, V>(m, kBits - kMsdBits, kBits),
                            std::size_t{1}}));
  }
  ensure_hist(ws);
  ensure_slots(ws, transfer_options(opts));
}

// Copies the pieces back: pinned destinations by direct DMA on `direct`, pageable ones through
// the workspace's pinned slots (CPU threads copy chunk i out of its slot while the DMA engine
// fills the next). Pageable pieces that continue one another on both sides (the groups of one
// array) are chunked as one run, so no chunk is cut short at a group boundary; each chunk's DMA
// waits on the device for the event of the last piece it touches (the events complete in the
// order of the pieces of a run: the sorts run in order on one stream). prepare(g), when set, must
// have recorded the events of groups <= g when it returns: it is called before any copy waits on
// them, and once for the last group right after the first copies are issued, so the host enqueues
// the remaining sorts while the GPU sorts the first group and the first chunks are copied.
void copy_back(const std::vector<D2HPiece>& pieces, SortWorkspace& ws, const TransferOptions& to, cudaStream_t staged,
               cudaStream_t direct, StageTimes& t, const std::function<void(std::size_t)>& prepare = {}) {
  auto ready = [&](std::size_t group) {
    if (prepare) prepare(group);
  };
  struct End {
    std::size_t end;  // end offset of a piece in its run
    cudaEvent_t event;
    std::size_t group;
  };
  struct Run {
    const char* src;
    char* dst;
    std::size_t bytes;
    std::vector<End> ends;
  };
  std::vector<Run> runs;
  std::size_t last_group = 0;
  for (const D2HPiece& p : pieces) {
    last_group = std::max(last_group, p.group);
    if (p.bytes == 0) continue;
    if (gpu::is_pinned(p.dst)) {
      ready(p.group);
      TANDEM_CUDA(cudaStreamWaitEvent(direct, p.ready, 0));
      TANDEM_CUDA(cudaMemcpyAsync(p.dst, p.src, p.bytes, cudaMemcpyDeviceToHost, direct));
      continue;
    }
    auto r = std::find_if(runs.begin(), runs.end(),
                          [&](const Run& x) { return x.src + x.bytes == p.src && x.dst + x.bytes == p.dst; });
    if (r == runs.end()) r = runs.insert(runs.end(), Run{p.src, p.dst, 0, {}});
    r->bytes += p.bytes;
    r->ends.push_back({r->bytes, p.ready, p.group});
  }
  std::vector<std::pair<D2HPiece, std::size_t>> chunks;  // with the group whose event it waits on
  for (const Run& r : runs)
    for (std::size_t off = 0; off < r.bytes; off += to.chunk_bytes) {
      const std::size_t len = std::min(to.chunk_bytes, r.bytes - off);
      const auto last = std::lower_bound(r.ends.begin(), r.ends.end(), off + len,
                                         [](const End& e, std::size_t v) { return e.end < v; });
      chunks.push_back({{r.src + off, r.dst + off, len, last->event, last->group}, last->group});
    }
  if (!chunks.empty()) {
    const std::size_t S = static_cast<std::size_t>(to.slots);
    ensure_slots(ws, to);
    auto issue = [&](std::size_t c) {
      const std::size_t slot = c % S;
      ready(chunks[c].second);
      TANDEM_CUDA(cudaStreamWaitEvent(staged, chunks[c].first.ready, 0));
      TANDEM_CUDA(cudaMemcpyAsync(ws.d2h_slots[slot].data(), chunks[c].first.src, chunks[c].first.bytes,
                                  cudaMemcpyDeviceToHost, staged));
      ws.d2h_done[slot].record(staged);
    };
    for (std::size_t c = 0; c < std::min(S, chunks.size()); ++c) issue(c);
    ready(last_group);  // the rest of the sorts, while the first chunks are sorted and copied
    Stopwatch w;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      const std::size_t slot = c % S;
      w.reset();
      ws.d2h_done[slot].sync();
      t.d2h_wait += w.seconds();
      w.reset();
      parallel_copy(chunks[c].first.dst, ws.d2h_slots[slot].data(), chunks[c].first.bytes, to.threads);
      t.d2h_copy += w.seconds();
      if (c + S < chunks.size()) issue(c + S);
    }
  }
  ready(last_group);
  TANDEM_CUDA(cudaStreamSynchronize(direct));
  TANDEM_CUDA(cudaStreamSynchronize(staged));
}

// One piece that fits on the GPU: src -> device (keys mapped to ordered bits and every digit
// counted per chunk while the next chunk is copied) -> sort -> dst (dst may be src). The sort is
// an MSD split when the histograms allow (plan_gpu_split): a pass on the highest digit where the
// keys differ, then groups of buckets sorted on the bits below one after the other, each group's
// D2H copy starting as soon as it is sorted; otherwise one CUB sort of the whole array (of the bits
// below the agreeing high digits). For keys only, the pass on the top digit runs per upload batch
// during the upload and each group is gathered from the batches. The caller holds ws.mu.
//
// The stages are the methods of FitSort, in the order run() calls them: buffers and upload
// batches, the upload, the split plan from the histograms, the sorts (one of four ways), the
// copies back.
template <class K, class V>
class FitSort {
 public:
  FitSort(const K* src_k, const V* src_v, K* dst_k, V* dst_v, std::size_t n, const SortOptions& opts, SortWorkspace& ws,
          cudaStream_t s, StageTimes& t)
      : src_k_(src_k),
        src_v_(src_v),
        dst_k_(dst_k),
        dst_v_(dst_v),
        n_(n),
        opts_(opts),
        ws_(ws),
        s_(s),
        t_(t),
        map_(needs_mapping<K>(opts.descending)),
        merge_(opts.algorithm == SortAlgorithm::merge),
        split_min_(opts.gpu_tuning.split_min_elements ? opts.gpu_tuning.split_min_elements : kGpuSplitMinElements),
        count_(!merge_ && n >= split_min_),
        to_(transfer_options(opts)) {}

  void run() {
    take_buffers();
    plan_batches();
    Stopwatch w;
    ws_.begin(s_);
    upload();
    t_.h2d += w.seconds();
    w.reset();
    plan_split();
    enqueue_sorts();
    t_.setup += w.seconds();
    w.reset();
    copy_back(pieces_, ws_, to_, staged_, direct_, t_, prepare_);
    TANDEM_CUDA(cudaStreamSynchronize(s_));
    ws_.end(s_);
    t_.d2h += w.seconds();
    record_times();
  }

 private:
  using U = ordered_bits_t<K>;
  static constexpr bool kValues = !std::is_same_v<V, NoValue>;
  static constexpr int kBits = static_cast<int>(sizeof(U)) * 8;
  static constexpr std::size_t kHist = sizeof(U) * kMsdBuckets;  // one histogram per 8-bit digit
  static constexpr int kTop = kBits - kMsdBits;                  // the top digit's shift

  void take_buffers() {
    dk_ = reinterpret_cast<U*>(grow(ws_.keys, n_ * sizeof(K)));
    if constexpr (kValues) dv_ = reinterpret_cast<V*>(grow(ws_.values, n_ * sizeof(V)));
    if (!merge_) {
      ak_ = reinterpret_cast<U*>(grow(ws_.alt_keys, n_ * sizeof(U)));
      if constexpr (kValues) av_ = reinterpret_cast<V*>(grow(ws_.alt_values, n_ * sizeof(V)));
    }
    ensure_hist(ws_);
  }

  // Keys only: the upload is cut into batches of whole chunks, each partitioned on the top digit
  // (one CUB pass, on the side stream) into ak while the next chunks are copied; the histograms
  // are kept per batch so the groups can be gathered from every batch later. Used when the plan
  // splits on the top digit; otherwise dk still holds the keys (a permutation of them) and the
  // plain MSD pass runs after the upload.
  void plan_batches() {
    const std::size_t chunks = (n_ * sizeof(K) + to_.chunk_bytes - 1) / to_.chunk_bytes;
    nb_ = (count_ && !kValues && chunks >= 2) ? std::min(kMaxUploadBatches, chunks) : 1;
    batch_end_.resize(nb_);  // element end of each batch
    for (std::size_t j = 0; j < nb_; ++j)
      batch_end_[j] = std::min(n_, (chunks * (j + 1) / nb_) * (to_.chunk_bytes / sizeof(K)));
    if (nb_ > 1) {
      std::size_t biggest = 0;
      for (std::size_t j = 0; j < nb_; ++j) biggest = std::max(biggest, batch_end_[j] - (j ? batch_end_[j - 1] : 0));
      temp_bytes_ = std::max({radix_temp_bytes<U, NoValue>(n_, 0, kBits), radix_temp_bytes<U, NoValue>(n_, kTop, kBits),
                              radix_temp_bytes<U, NoValue>(biggest, kTop, kBits)});
      tp_ = grow(ws_.temp, temp_bytes_);  // before the upload: the batch passes use it on the side stream
    }
  }

  void upload() {
    if (count_) TANDEM_CUDA(cudaMemsetAsync(ws_.hist.data(), 0, nb_ * kHist * sizeof(unsigned long long), s_));
    // Per chunk, once its copy has landed: map and count on a side stream, so the copy engine never
    // waits for a kernel before the next chunk.
    if (map_ || count_) {
      side_done_.record(s_);  // the side stream starts after what s holds (the memset, earlier users)
      TANDEM_CUDA(cudaStreamWaitEvent(side_, side_done_.get(), 0));
    }
    copy_to_device_chunked(dk_, src_k_, n_ * sizeof(K), s_, to_,
                           [this](std::size_t off, std::size_t len, cudaStream_t st) { on_chunk(off, len, st); });
    if (map_ || count_) {
      side_done_.record(side_);
      TANDEM_CUDA(cudaStreamWaitEvent(s_, side_done_.get(), 0));
    }
    if constexpr (kValues) copy_to_device(dv_, src_v_, n_ * sizeof(V), s_, to_);
  }

  void on_chunk(std::size_t off, std::size_t len, cudaStream_t st) {
    if (!map_ && !count_) return;
    char* dkb = reinterpret_cast<char*>(dk_);
    arrived_.record(st);
    TANDEM_CUDA(cudaStreamWaitEvent(side_, arrived_.get(), 0));
    if (map_) map_to_bits<K>(dkb + off, len / sizeof(K), opts_.descending, side_);
    if (count_)
      digit_histogram<U>(reinterpret_cast<const U*>(dkb + off), len / sizeof(K), ws_.hist.data() + batch_ * kHist,
                         side_);
    if constexpr (!kValues) {
      for (; nb_ > 1 && batch_ < nb_ && (off + len) / sizeof(K) >= batch_end_[batch_]; ++batch_) {
        const std::size_t b0 = batch_ ? batch_end_[batch_ - 1] : 0, m = batch_end_[batch_] - b0;
        if (!sort_bits_range<U, NoValue>(dk_ + b0, ak_ + b0, nullptr, nullptr, m, kTop, kBits, tp_, temp_bytes_, side_))
          // the partition stayed in dk: ak is where the gather reads
          TANDEM_CUDA(cudaMemcpyAsync(ak_ + b0, dk_ + b0, m * sizeof(U), cudaMemcpyDeviceToDevice, side_));
      }
    }
  }

  // The split plan from the digit histograms (read back once), and the top digit's counts per
  // upload batch (nb x 256).
  void plan_split() {
    if (merge_) {
      plan_.why = "algorithm=merge: one CUB merge sort";
    } else if (count_) {
      TANDEM_CUDA(cudaMemcpyAsync(ws_.hist_host.data(), ws_.hist.data(), nb_ * kHist * sizeof(unsigned long long),
                                  cudaMemcpyDeviceToHost, s_));
      TANDEM_CUDA(cudaStreamSynchronize(s_));
      std::array<std::uint64_t, kHist> counts{};
      batch_counts_.assign(nb_ * kMsdBuckets, 0);
      for (std::size_t j = 0; j < nb_; ++j)
        for (std::size_t b = 0; b < kHist; ++b) {
          counts[b] += ws_.hist_host[j * kHist + b];
          if (b >= kHist - kMsdBuckets)
            batch_counts_[j * kMsdBuckets + (b - (kHist - kMsdBuckets))] = ws_.hist_host[j * kHist + b];
        }
      plan_ = plan_gpu_split(counts, n_, kBits, split_min_);
    } else {
      plan_ = plan_gpu_split({}, n_, kBits, split_min_);
    }
    groups_ = plan_.split ? plan_.groups : std::vector<ElementRange>{{0, n_}};
    ready_.reserve(groups_.size());
    for (std::size_t i = 0; i < groups_.size(); ++i) ready_.emplace_back(true);
  }

  // Enqueues the sorts on s (asynchronous), one event per group, and the D2H pieces of every group.
  void enqueue_sorts() {
    std::size_t largest_group = 0;
    for (const ElementRange& g : groups_) largest_group = std::max(largest_group, g.size());
    // The pre-partitioned batches serve when the split is on the top digit and one group's
    // alternate buffer stays small (<= n/8: within the memory the sizing allows for).
    if (nb_ > 1 && plan_.split && plan_.msd_shift == kTop && largest_group <= n_ / 8)
      sk_ = reinterpret_cast<U*>(grow(ws_.scratch, std::max<std::size_t>(largest_group, 1) * sizeof(U)));
    e_start_.record(s_);
    if (merge_) sort_merged();
    else if (!plan_.split) sort_whole();
    else if (sk_) sort_gathered();
    else sort_after_msd_pass();
    if (!prepare_) e_end_.record(s_);
  }

  void sort_merged() {
    e_msd_.record(s_);
    sort_bits<U, V>(dk_, dv_, n_, true, ws_, s_);
    finish_group(0, dk_);
    add_pieces(0, dk_, dv_);
  }

  // Bits above plan.sort_bits agree for every key (0: all keys are equal): one sort of the rest.
  void sort_whole() {
    const std::size_t temp = plan_.sort_bits > 0 ? radix_temp_bytes<U, V>(n_, 0, plan_.sort_bits) : 0;
    char* tp2 = grow(ws_.temp, std::max<std::size_t>(temp, 1));
    e_msd_.record(s_);
    const bool alt = sort_bits_range<U, V>(dk_, ak_, dv_, av_, n_, 0, plan_.sort_bits, tp2, temp, s_);
    finish_group(0, alt ? ak_ : dk_);
    add_pieces(0, alt ? ak_ : dk_, alt ? av_ : dv_);
  }

  // Each group gathered from the batches' partitions in ak into its place in dk (the batches in
  // upload order, so the group holds exactly its buckets' keys), then sorted there with the
  // scratch buffer as CUB's alternate. Enqueued lazily by copy_back: the first groups before the
  // first copies, the rest while those run.
  void sort_gathered() {
    t_.batches += nb_;
    e_msd_.record(s_);
    for (std::size_t b = 0; b < kMsdBuckets; ++b)
      for (std::size_t j = 0; j < nb_; ++j) prefix_[b + 1] += batch_counts_[j * kMsdBuckets + b];
    for (std::size_t b = 0; b < kMsdBuckets; ++b) prefix_[b + 1] += prefix_[b];
    for (std::size_t i = 0; i < groups_.size(); ++i) add_pieces(i, dk_, dv_);
    prepare_ = [this](std::size_t upto) {
      for (; next_ <= upto && next_ < groups_.size(); ++next_) gather_and_sort(next_);
    };
    prepare_(0);  // the GPU starts on the first group at once
  }

  void gather_and_sort(std::size_t i) {
    const ElementRange& g = groups_[i];
    const std::size_t lo_b = std::lower_bound(prefix_.begin(), prefix_.end(), g.begin) - prefix_.begin();
    const std::size_t hi_b = std::lower_bound(prefix_.begin(), prefix_.end(), g.end) - prefix_.begin();
    std::size_t at = g.begin;
    GatherList<U> list;
    for (std::size_t j = 0; j < nb_; ++j) {
      const std::uint64_t* c = &batch_counts_[j * kMsdBuckets];
      std::size_t from = j ? batch_end_[j - 1] : 0;
      for (std::size_t b = 0; b < lo_b; ++b) from += c[b];
      std::size_t len = 0;
      for (std::size_t b = lo_b; b < hi_b; ++b) len += c[b];
      if (len) {
        list.src[list.count] = ak_ + from;
        list.dst[list.count] = dk_ + at;
        list.n[list.count++] = len;
      }
      at += len;
    }
    if (at != g.end) throw Error("sort: internal error, the upload batches' histograms do not add up");
    gather_segments<U>(list, s_);
    const int bits = g.buckets > 1 ? kBits : kTop;
    const bool a2 =
        sort_bits_range<U, NoValue>(dk_ + g.begin, sk_, nullptr, nullptr, g.size(), 0, bits, tp_, temp_bytes_, s_);
    if (a2) TANDEM_CUDA(cudaMemcpyAsync(dk_ + g.begin, sk_, g.size() * sizeof(U), cudaMemcpyDeviceToDevice, s_));
    finish_group(i, dk_);
    if (i + 1 == groups_.size()) e_end_.record(s_);
  }

  // The MSD pass sorts bits [lo, hi); a group of one bucket then needs bits [0, lo) sorted, a
  // group of several buckets bits [0, hi) (its buckets are in order, but a sort of the low bits
  // alone would interleave them). CUB's temporary storage for n elements and all hi bits bounds
  // every call.
  void sort_after_msd_pass() {
    const int lo = plan_.msd_shift, hi = lo + kMsdBits;
    const std::size_t temp = std::max(radix_temp_bytes<U, V>(n_, 0, hi), radix_temp_bytes<U, V>(n_, lo, hi));
    char* tp2 = grow(ws_.temp, std::max<std::size_t>(temp, 1));
    const bool alt = sort_bits_range<U, V>(dk_, ak_, dv_, av_, n_, lo, hi, tp2, temp, s_);
    e_msd_.record(s_);
    U* ck = alt ? ak_ : dk_;
    U* ok = alt ? dk_ : ak_;
    V* cv = alt ? av_ : dv_;
    V* ov = alt ? dv_ : av_;
    for (std::size_t i = 0; i < groups_.size(); ++i) {
      const ElementRange& g = groups_[i];
      const int bits = g.buckets > 1 ? hi : lo;
      const bool a2 = sort_bits_range<U, V>(ck + g.begin, ok + g.begin, kValues ? cv + g.begin : nullptr,
                                            kValues ? ov + g.begin : nullptr, g.size(), 0, bits, tp2, temp, s_);
      finish_group(i, a2 ? ok : ck);
      add_pieces(i, a2 ? ok : ck, a2 ? ov : cv);
    }
  }

  // The D2H pieces of group i, whose sorted keys (values) will be at rk (rv) + its offset.
  void add_pieces(std::size_t i, U* rk, V* rv) {
    const ElementRange& g = groups_[i];
    pieces_.push_back({reinterpret_cast<const char*>(rk + g.begin), reinterpret_cast<char*>(dst_k_ + g.begin),
                       g.size() * sizeof(K), ready_[i].get(), i});
    if constexpr (kValues)
      pieces_.push_back({reinterpret_cast<const char*>(rv + g.begin), reinterpret_cast<char*>(dst_v_ + g.begin),
                         g.size() * sizeof(V), ready_[i].get(), i});
  }

  // Group i sorted into rk: back to the caller's key type, and its event.
  void finish_group(std::size_t i, U* rk) {
    if (map_) map_from_bits<K>(rk + groups_[i].begin, groups_[i].size(), opts_.descending, s_);
    ready_[i].record(s_);
  }

  void record_times() {
    t_.exposed += ready_.front().seconds_since(e_start_);
    t_.msd += e_msd_.seconds_since(e_start_);
    t_.groups += e_end_.seconds_since(e_msd_);
    (plan_.split ? t_.split_pieces : t_.whole_pieces) += 1;
    t_.groups_n += groups_.size();
    t_.why = plan_.why;
  }

  const K* src_k_;
  const V* src_v_;
  K* dst_k_;
  V* dst_v_;
  const std::size_t n_;
  const SortOptions& opts_;
  SortWorkspace& ws_;
  const cudaStream_t s_;
  StageTimes& t_;
  const bool map_, merge_;
  const std::size_t split_min_;
  const bool count_;
  const TransferOptions to_;
  U* dk_{nullptr};  // the keys on the device, then their MSD pass's output or the gathered groups
  V* dv_{nullptr};
  U* ak_{nullptr};  // CUB's alternate buffers (radix sorts)
  V* av_{nullptr};
  U* sk_{nullptr};  // a group's alternate buffer when groups are gathered from the upload batches
  gpu::Stream staged_, direct_, side_;
  gpu::Event arrived_{false}, side_done_{false};
  gpu::Event e_start_, e_msd_, e_end_;
  std::size_t nb_{1};                   // upload batches
  std::vector<std::size_t> batch_end_;  // element end of each batch
  std::size_t batch_{0};                // batches partitioned so far (during the upload)
  char* tp_{nullptr};                   // CUB temporary storage of the batch passes and gathered groups
  std::size_t temp_bytes_{0};
  GpuSplitPlan plan_;
  std::vector<std::uint64_t> batch_counts_;  // nb x 256 counts of the top digit
  std::vector<ElementRange> groups_;
  std::vector<gpu::Event> ready_;  // one per group: sorted and mapped back
  std::vector<D2HPiece> pieces_;
  std::function<void(std::size_t)> prepare_;             // enqueues groups lazily (gathered groups)
  std::array<std::uint64_t, kMsdBuckets + 1> prefix_{};  // bucket starts of the top digit
  std::size_t next_{0};                                  // groups enqueued so far (lazy path)
};

template <class K, class V>
void fit_sort(const K* src_k, const V* src_v, K* dst_k, V* dst_v, std::size_t n, const SortOptions& opts,
              SortWorkspace& ws, cudaStream_t s, StageTimes& t) {
  FitSort<K, V>(src_k, src_v, dst_k, dst_v, n, opts, ws, s, t).run();
}

// The fit path's stages in the Report.
void add_fit_stages(Report& r, const StageTimes& t, const std::string& what, const SortOptions& opts) {
  r.add("H2D copy + map + histogram", "cpu+gpu0", t.h2d, what);
  r.add("GPU sort before first D2H", "gpu0", t.exposed,
        fmt::format("{}; device time: MSD pass {}, {} sort(s) {}; host plan + enqueue before the first copy {}",
                    opts.algorithm == SortAlgorithm::merge ? "CUB merge sort" : "CUB radix",
                    t.batches ? fmt::format("during the upload ({} batches)", t.batches) : human_seconds(t.msd),
                    t.groups_n, human_seconds(t.groups), human_seconds(t.setup)));
  r.add("D2H copy (overlaps sorts)", "cpu+gpu0", t.d2h,
        fmt::format(
            "after each group's sort; {} piece(s) split by the top 8 bits, {} sorted whole; staged: host waited {} "
            "for DMA, copied {}",
            t.split_pieces, t.whole_pieces, human_seconds(t.d2h_wait), human_seconds(t.d2h_copy)));
  r.note(t.why);
  r.details()["gpu_split"] = t.split_pieces > 0;
  r.details()["gpu_groups"] = t.groups_n;
  r.details()["gpu_upload_batches"] = t.batches;
}

// Status lines for the caller's progress callback (SortOptions::progress); an empty one at the end.
class Progress {
 public:
  Progress(const std::function<void(std::string_view)>& f, bool on) : f_(on && f ? &f : nullptr) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void line(const std::string& text) {
    if (f_) (*f_)(text);
  }
  ~Progress() {
    if (!f_) return;
    try {
      (*f_)({});
    } catch (...) {  // a destructor must not throw; the sort itself is done
    }
  }

 private:
  const std::function<void(std::string_view)>* f_;
};

// Larger than the budget: a stable MSD partition on the host (all CPU threads) into pieces that
// fit on the GPU, each sorted there through fit_sort straight into its final place: no merge.
template <class K, class V>
void out_of_core(std::span<K> keys, std::span<V> values, const SortOptions& opts, std::size_t budget, SortWorkspace& ws,
                 cudaStream_t s, Report& r) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  const std::size_t n = keys.size();
  const std::size_t per = sizeof(K) + (kValues ? sizeof(V) : 0);
  const std::size_t cap = std::size_t{1} << 30;  // CUB takes int sizes
  const std::size_t C = std::min(out_of_core_chunk(budget, per), cap);
  const int T = opts.threads > 0 ? opts.threads : default_threads();
  Progress progress(opts.progress, n * per >= (std::size_t{1} << 30));
  progress.line(fmt::format("partitioning {} on {} CPU threads", human_bytes(n * per), T));
  reserve_fit<K, V>(ws, std::min(C, n), opts);
  StageTimes t;
  // Pieces are independent: if the GPU fails on one (device=auto), it and the rest are sorted on
  // the CPU from their source (a piece sorted in place may be lost if the failure hits its D2H copy).
  std::string failure;
  double cpu_s = 0;
  std::size_t cpu_pieces = 0;
  const PieceSort<K, V> piece = [&](const K* sk, const V* sv, K* dk, V* dv, std::size_t len) {
    if (failure.empty()) {
      try {
        fit_sort<K, V>(sk, sv, dk, dv, len, opts, ws, s, t);
        return;
      } catch (const CudaError& e) {
        if (opts.device == Device::gpu) throw;
        failure = e.what();
      }
    }
    Stopwatch w;
    if (sk != dk) parallel_copy(dk, sk, len * sizeof(K), T);
    std::span<V> vs;
    if constexpr (kValues) {
      if (sv != dv) parallel_copy(dv, sv, len * sizeof(V), T);
      vs = std::span<V>(dv, len);
    }
    if (opts.algorithm == SortAlgorithm::merge) cpu_comparison_sort(std::span<K>(dk, len), vs, opts.descending, T);
    else cpu_radix_sort(std::span<K>(dk, len), vs, opts.descending, T);
    cpu_s += w.seconds();
    ++cpu_pieces;
  };
  const MsdStats st =
      msd_partition_sort<K, V>(keys, values, opts.descending, C, T, piece, [&](std::size_t done, std::size_t all) {
        progress.line(fmt::format("{:.0f}% sorted ({} of {} elements; pieces on the GPU)",
                                  100.0 * double(done) / double(all), done, all));
      });
  r.add("CPU MSD partition", "cpu", st.partition_s,
        fmt::format("histogram + scatter, {} threads, {} level(s) of 8-bit digits, pieces <= {} elements{}", T,
                    st.levels, C, st.copied ? fmt::format(", {} equal keys left in place", st.copied) : std::string()));
  add_fit_stages(r, t, fmt::format("{} pieces (largest {})", st.pieces, st.max_piece), opts);
  if (!failure.empty()) {
    r.add("CPU sort after GPU failure", "cpu", cpu_s, fmt::format("{} pieces", cpu_pieces));
    r.note(fmt::format("GPU failed ({}); the remaining {} pieces were sorted on the CPU", failure, cpu_pieces));
  }
  r.details()["pieces"] = st.pieces;
  r.details()["piece_elements"] = C;
  r.details()["partition_levels"] = st.levels;
}

}  // namespace

std::size_t gpu_sort_budget(const SortOptions& opts) {
  auto [free, total] = gpu::memory_info();
  (void)total;
  SortWorkspace& ws = sort_workspace();
  std::size_t held = 0;
  {
    std::lock_guard lock(ws.mu);
    held = ws.temp.bytes() + ws.alt_keys.bytes() + ws.alt_values.bytes() + ws.keys.bytes() + ws.values.bytes();
  }
  std::size_t b = (free + held) / 10 * 9;
  if (opts.gpu_memory_limit > 0) b = std::min<std::size_t>(b, opts.gpu_memory_limit);
  return b;
}

template <class K, class V>
void gpu_sort_host(std::span<K> keys, std::span<V> values, const SortOptions& opts, Report& r, const K* keys_in,
                   const V* values_in) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  gpu::require();
  const std::size_t n = keys.size();
  const K* src_k = keys_in ? keys_in : keys.data();
  const V* src_v = kValues ? (values_in ? values_in : values.data()) : nullptr;
  if (n < 2) {
    copy_sources(keys, values, src_k, src_v, opts.threads);
    return;
  }
  const std::size_t per = sizeof(K) + (kValues ? sizeof(V) : 0);
  const std::size_t budget = gpu_sort_budget(opts);
  SortWorkspace& ws = sort_workspace();
  std::lock_guard lock(ws.mu);
  gpu::Stream s;
  const bool pinned = gpu::is_pinned(src_k) && gpu::is_pinned(keys.data());
  if (gpu_bytes_needed(n, per) <= budget && n <= static_cast<std::size_t>(INT_MAX)) {
    StageTimes t;
    fit_sort<K, V>(src_k, src_v, keys.data(), kValues ? values.data() : nullptr, n, opts, ws, s, t);
    add_fit_stages(r, t,
                   fmt::format("{} ({})", human_bytes(n * per),
                               pinned ? "pinned, direct DMA" : "pageable, staged through pinned slots"),
                   opts);
  } else {
    copy_sources(keys, values, src_k, src_v, opts.threads);
    out_of_core(keys, values, opts, budget, ws, s, r);
  }
}

#define TANDEM_GPU_HOST(K, V) \
  template void gpu_sort_host<K, V>(std::span<K>, std::span<V>, const SortOptions&, Report&, const K*, const V*);
#define TANDEM_GPU_HOST_ALL(K) \
  TANDEM_GPU_HOST(K, NoValue) TANDEM_GPU_HOST(K, std::uint32_t) TANDEM_GPU_HOST(K, std::uint64_t)
TANDEM_GPU_HOST_ALL(std::uint32_t)
TANDEM_GPU_HOST_ALL(std::int32_t)
TANDEM_GPU_HOST_ALL(std::uint64_t)
TANDEM_GPU_HOST_ALL(std::int64_t)
TANDEM_GPU_HOST_ALL(float)
TANDEM_GPU_HOST_ALL(double)

}  // namespace detail

namespace {
// The 32-bit keys' MSD sort where the options allow it and it takes the keys; false: not sorted.
template <class U, class V>
bool msd_sorted(const U* in, U* out, std::size_t n, const SortOptions& opts, detail::SortWorkspace& ws,
                cudaStream_t stream) {
  if constexpr (std::is_same_v<U, std::uint32_t> && std::is_same_v<V, detail::NoValue>) {
    return opts.device_host_wait && opts.algorithm != SortAlgorithm::merge &&
           detail::msd_sort_keys32(in, out, n, ws, stream, opts.gpu_tuning.msd_keys32_min_elements);
  } else {
    return false;
  }
}

template <class K, class V>
DeviceSortPath device_sort(K* d_keys, V* d_values, std::size_t n, const SortOptions& opts, cudaStream_t stream) {
  using U = ordered_bits_t<K>;
  if (n < 2) return DeviceSortPath::none;
  auto& ws = detail::sort_workspace();
  std::lock_guard lock(ws.mu);
  ws.begin(stream);
  const bool map = detail::needs_mapping<K>(opts.descending);
  if (map) detail::map_to_bits<K>(d_keys, n, opts.descending, stream);
  auto* bits = reinterpret_cast<U*>(d_keys);
  const bool merge = opts.algorithm == SortAlgorithm::merge;
  const bool msd = msd_sorted<U, V>(bits, bits, n, opts, ws, stream);
  if (!msd) detail::sort_bits<U, V>(bits, d_values, n, merge, ws, stream);
  if (map) detail::map_from_bits<K>(d_keys, n, opts.descending, stream);
  ws.end(stream);
  return msd ? DeviceSortPath::msd_radix : merge ? DeviceSortPath::cub_merge : DeviceSortPath::cub_radix;
}
}  // namespace

std::string_view to_string(DeviceSortPath p) {
  switch (p) {
    case DeviceSortPath::none: return "none";
    case DeviceSortPath::cub_radix: return "cub-radix";
    case DeviceSortPath::cub_merge: return "cub-merge";
    case DeviceSortPath::msd_radix: return "msd-radix";
  }
  return "?";
}

template <class K>
DeviceSortPath sort_device(K* d_keys, std::size_t n, const SortOptions& opts, cudaStream_t stream) {
  return device_sort<K, detail::NoValue>(d_keys, nullptr, n, opts, stream);
}

template <class K, class V>
void sort_pairs_device(K* d_keys, V* d_values, std::size_t n, const SortOptions& opts, cudaStream_t stream) {
  (void)device_sort<K, V>(d_keys, d_values, n, opts, stream);
}

template <class K>
DeviceSortPath sort_device_copy(const K* d_in, K* d_out, std::size_t n, const SortOptions& opts, cudaStream_t stream) {
  using U = ordered_bits_t<K>;
  if (n == 0) return DeviceSortPath::none;
  if (d_in == d_out || n < 2 || opts.algorithm == SortAlgorithm::merge) {
    if (d_in != d_out) TANDEM_CUDA(cudaMemcpyAsync(d_out, d_in, n * sizeof(K), cudaMemcpyDeviceToDevice, stream));
    return sort_device(d_out, n, opts, stream);
  }
  auto& ws = detail::sort_workspace();
  std::lock_guard lock(ws.mu);
  ws.begin(stream);
  auto* out = reinterpret_cast<U*>(d_out);
  bool msd = false;
  if (detail::needs_mapping<K>(opts.descending)) {
    // The mapping pass writes the copy; the sort then runs in place on it.
    detail::map_to_bits_copy<K>(d_in, d_out, n, opts.descending, stream);
    msd = msd_sorted<U, detail::NoValue>(out, out, n, opts, ws, stream);
    if (!msd) detail::sort_bits<U, detail::NoValue>(out, nullptr, n, false, ws, stream);
    detail::map_from_bits<K>(d_out, n, opts.descending, stream);
  } else {
    const auto* in = reinterpret_cast<const U*>(d_in);
    msd = msd_sorted<U, detail::NoValue>(in, out, n, opts, ws, stream);
    if (!msd) detail::sort_bits_copy<U>(in, out, n, ws, stream);
  }
  ws.end(stream);
  return msd ? DeviceSortPath::msd_radix : DeviceSortPath::cub_radix;
}

void release_sort_workspace() {
  auto& ws = detail::sort_workspace();
  std::lock_guard lock(ws.mu);
  if (ws.pending) TANDEM_CUDA(cudaEventSynchronize(ws.done));
  ws.temp = {};
  ws.scratch = {};
  ws.alt_keys = {};
  ws.alt_values = {};
  ws.keys = {};
  ws.values = {};
  ws.hist = {};
  ws.hist_host = {};
  ws.msd = {};
  ws.msd_host = {};
  ws.d2h_slots.clear();
  ws.d2h_done.clear();
}

#define TANDEM_SORT_DEVICE(K)                                                                               \
  template DeviceSortPath sort_device<K>(K*, std::size_t, const SortOptions&, cudaStream_t);                \
  template DeviceSortPath sort_device_copy<K>(const K*, K*, std::size_t, const SortOptions&, cudaStream_t); \
  template void sort_pairs_device<K, std::uint32_t>(K*, std::uint32_t*, std::size_t, const SortOptions&,    \
                                                    cudaStream_t);                                          \
  template void sort_pairs_device<K, std::uint64_t>(K*, std::uint64_t*, std::size_t, const SortOptions&, cudaStream_t);
TANDEM_SORT_DEVICE(std::uint32_t)
TANDEM_SORT_DEVICE(std::int32_t)
TANDEM_SORT_DEVICE(std::uint64_t)
TANDEM_SORT_DEVICE(std::int64_t)
TANDEM_SORT_DEVICE(float)
TANDEM_SORT_DEVICE(double)

}  // namespace tandem
#endif
