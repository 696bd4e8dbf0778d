// The distributed sort of keys in device memory, each key sorted once: the keys' range, a count
// of every rank's keys per bin of a 12-bit digit (summed over the ranks), a partition of each
// rank's keys by the rank that owns their bin, the exchange through NCCL (or host staging), one
// device sort of what each rank received, and a small second exchange that makes every slice
// exactly N/P keys (src/dist/device_sort_plan.hpp has the arithmetic).
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
// No fmt here: nvcc with fmt 9 rejects its compile-time format strings.
#include <vector>

#include "dist/device_sort_plan.hpp"
#include "dist/exchange.hpp"
#include "dist/mpi_check.hpp"
#include "dist/rank_report.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/dist.hpp"

namespace tandem::dist {
namespace {

namespace plan = device_sort_plan;
constexpr int kBinBits = 12;  // 4096 bins: their counts fit one block's shared memory
constexpr int kThreads = 256;
constexpr int kItems = 16;  // keys per thread in the partition's tiles

// A key's ordered bits, flipped for a descending sort, and the bin of those bits.
template <class K, class U>
__device__ U key_bits(K k, U flip) {
  return U(U(to_ordered(k)) ^ flip);
}
template <class K, class U>
__device__ std::uint32_t key_bin(K k, U flip, int shift, std::uint32_t mask) {
  return std::uint32_t(key_bits(k, flip) >> shift) & mask;
}

// The CUDA atomics' integer type of the same width as U.
template <class U>
using Atomic = std::conditional_t<sizeof(U) == 4, unsigned int, unsigned long long>;

// The smallest and largest ordered bits of the keys: lo_hi[0] min, lo_hi[1] max (set up as
// max and 0 before the launch).
template <class K, class U>
__global__ void __launch_bounds__(kThreads) key_range_kernel(const K* keys, std::size_t n, U flip, Atomic<U>* lo_hi) {
  using Reduce = cub::BlockReduce<U, kThreads>;
  __shared__ typename Reduce::TempStorage tmp;
  U lo = std::numeric_limits<U>::max(), hi = 0;
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * kThreads) {
    const U b = key_bits(keys[i], flip);
    lo = b < lo ? b : lo;
    hi = b > hi ? b : hi;
  }
  lo = Reduce(tmp).Reduce(lo, cuda::minimum<>{});
  __syncthreads();
  hi = Reduce(tmp).Reduce(hi, cuda::maximum<>{});
  if (threadIdx.x == 0) {
    atomicMin(lo_hi, Atomic<U>(lo));
    atomicMax(lo_hi + 1, Atomic<U>(hi));
  }
}

// Keys per bin of bits [shift, shift + width): a shared-memory count per block, added to counts.
template <class K, class U>
__global__ void __launch_bounds__(kThreads)
    bin_count_kernel(const K* keys, std::size_t n, U flip, int shift, std::uint32_t mask, unsigned long long* counts) {
  __shared__ unsigned int h[1u << kBinBits];
  for (std::uint32_t b = threadIdx.x; b <= mask; b += kThreads) h[b] = 0;
  __syncthreads();
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * kThreads)
    atomicAdd(&h[key_bin(keys[i], flip, shift, mask)], 1u);
  __syncthreads();
  for (std::uint32_t b = threadIdx.x; b <= mask; b += kThreads)
    if (h[b]) atomicAdd(&counts[b], (unsigned long long)h[b]);
}

// Each tile's keys go to the part of `out` for the rank that owns their bin (owner[bin]): the
// warps' lanes with the same owner take their places with one shared atomic, then the tile
// reserves each owner's run in `out` with one global atomic. The order within a part is not
// kept (the receiving rank sorts it).
template <class K, class U>
__global__ void __launch_bounds__(kThreads)
    partition_kernel(const K* keys, std::size_t n, U flip, int shift, std::uint32_t mask, const std::uint16_t* owner,
                     int ranks, unsigned long long* cursor, K* out) {
  extern __shared__ unsigned long long base[];  // ranks bases, then ranks counts
  auto* count = reinterpret_cast<unsigned int*>(base + ranks);
  for (int r = threadIdx.x; r < ranks; r += kThreads) count[r] = 0;
  __syncthreads();
  const std::size_t tile = blockIdx.x * std::size_t(kThreads * kItems);
  const unsigned lane = threadIdx.x % 32;
  K k[kItems];
  int to[kItems];
  unsigned place[kItems];
#pragma unroll
  for (int u = 0; u < kItems; ++u) {
    const std::size_t i = tile + std::size_t(u) * kThreads + threadIdx.x;
    const bool valid = i < n;  // the same for a warp's lanes but the last tile's
    const unsigned active = __ballot_sync(0xffffffffu, valid);
    to[u] = -1;
    if (valid) {
      k[u] = keys[i];
      to[u] = owner[key_bin(k[u], flip, shift, mask)];
      const unsigned peers = __match_any_sync(active, to[u]);
      const int leader = __ffs(peers) - 1;
      unsigned first = 0;
      if (int(lane) == leader) first = atomicAdd(&count[to[u]], unsigned(__popc(peers)));
      first = __shfl_sync(peers, first, leader);
      place[u] = first + unsigned(__popc(peers & ((1u << lane) - 1)));
    }
  }
  __syncthreads();
  for (int r = threadIdx.x; r < ranks; r += kThreads)
    if (count[r]) base[r] = atomicAdd(&cursor[r], (unsigned long long)count[r]);
  __syncthreads();
#pragma unroll
  for (int u = 0; u < kItems; ++u)
    if (to[u] >= 0) out[base[to[u]] + place[u]] = k[u];
}

// Pairs: each element's owner (the rank of its bin) and its position, for a stable sort by owner.
template <class K, class U, class I>
__global__ void __launch_bounds__(kThreads)
    owner_index_kernel(const K* keys, std::size_t n, U flip, int shift, std::uint32_t mask,
                       const std::uint16_t* owner_of_bin, std::uint16_t* owner, I* index) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * kThreads) {
    owner[i] = owner_of_bin[key_bin(keys[i], flip, shift, mask)];
    index[i] = I(i);
  }
}

template <class K, class V, class I>
__global__ void __launch_bounds__(kThreads)
    gather_pairs_kernel(const I* index, std::size_t n, const K* keys, const V* values, K* keys_out, V* values_out) {
  for (std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * kThreads) {
    const I j = index[i];
    keys_out[i] = keys[j];
    values_out[i] = values[j];
  }
}

#if TANDEM_HAS_NCCL
void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw Error(std::string(call) + " failed: " + ncclGetErrorString(r));
}
#endif

int grid_for(std::size_t n) {
  int device = 0, sms = 0;
  TANDEM_CUDA(cudaGetDevice(&device));
  TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return int(std::max<std::size_t>(1, std::min<std::size_t>(blocks, std::size_t(sms) * 8)));
}

// Sends counts[d] keys of `data` (back to back in rank order) to each rank d and returns what
// this rank received, back to back in rank order: GPU to GPU through NCCL when the context has
// it, else staged through host memory and MPI. Collective; a failure to allocate on any rank
// fails every rank before the transfer starts.
template <class K>
gpu::DeviceBuffer<K> exchange_keys(const Context& ctx, const K* data, const std::vector<std::uint64_t>& counts,
                                   cudaStream_t stream, DistReport& out) {
  const Context::Impl& s = ctx.impl();
  std::vector<std::uint64_t> at(counts.size() + 1, 0), recv_counts(counts.size());
  for (std::size_t d = 0; d < counts.size(); ++d) at[d + 1] = at[d] + counts[d];
  gpu::DeviceBuffer<K> received;
  if (ctx.has_nccl()) {
#if TANDEM_HAS_NCCL
    check_mpi(MPI_Alltoall(counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, s.comm),
              "MPI_Alltoall");
    std::uint64_t total = 0;
    std::vector<std::uint64_t> from(std::size_t(s.size));
    for (int r = 0; r < s.size; ++r) from[r] = total, total += recv_counts[r];
    ctx.run_agreed([&] { received = gpu::DeviceBuffer<K>(total); });
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int d = 0; d < s.size; ++d) {
      if (d == s.rank) continue;
      if (counts[d])
        check_nccl(ncclSend(data + at[d], counts[d] * sizeof(K), ncclUint8, d, s.nccl, stream), "ncclSend");
      if (recv_counts[d])
        check_nccl(ncclRecv(received.data() + from[d], recv_counts[d] * sizeof(K), ncclUint8, d, s.nccl, stream),
                   "ncclRecv");
      out.traffic.bytes_sent += counts[d] * sizeof(K);
      out.traffic.bytes_received += recv_counts[d] * sizeof(K);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    if (counts[s.rank])
      TANDEM_CUDA(cudaMemcpyAsync(received.data() + from[s.rank], data + at[s.rank], counts[s.rank] * sizeof(K),
                                  cudaMemcpyDeviceToDevice, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    out.report.note("exchange: NCCL, GPU to GPU");
#endif
  } else {
    // Only the blocks for other ranks go through host memory; this rank's own stays on the GPU.
    const auto me = std::size_t(s.rank);
    std::vector<std::uint64_t> byte_counts(counts.size());
    for (std::size_t d = 0; d < counts.size(); ++d) byte_counts[d] = d == me ? 0 : counts[d] * sizeof(K);
    std::vector<K> host;
    ctx.run_agreed([&] {
      host.resize(at.back() - counts[me]);
      TANDEM_CUDA(cudaMemcpy(host.data(), data, at[me] * sizeof(K), cudaMemcpyDeviceToHost));
      TANDEM_CUDA(cudaMemcpy(host.data() + at[me], data + at[me + 1], (at.back() - at[me + 1]) * sizeof(K),
                             cudaMemcpyDeviceToHost));
    });
    std::vector<K> got;
    // exchange_bytes, not the typed helper: nvcc does not deduce its span arguments.
    const Traffic t = exchange_bytes(s, reinterpret_cast<const std::byte*>(host.data()),
                                     std::span<const std::uint64_t>(byte_counts.data(), byte_counts.size()),
                                     recv_counts, [&](std::uint64_t bytes) {
                                       got.resize(bytes / sizeof(K));
                                       return reinterpret_cast<std::byte*>(got.data());
                                     });
    out.traffic.bytes_sent += t.bytes_sent;
    out.traffic.bytes_received += t.bytes_received;
    std::uint64_t below = 0;  // keys received from lower ranks: they go before this rank's own
    for (std::size_t r = 0; r < me; ++r) below += recv_counts[r] / sizeof(K);
    ctx.run_agreed([&] {
      received = gpu::DeviceBuffer<K>(got.size() + counts[me]);
      TANDEM_CUDA(cudaMemcpy(received.data(), got.data(), below * sizeof(K), cudaMemcpyHostToDevice));
      TANDEM_CUDA(cudaMemcpy(received.data() + below, data + at[me], counts[me] * sizeof(K), cudaMemcpyDeviceToDevice));
      TANDEM_CUDA(cudaMemcpy(received.data() + below + counts[me], got.data() + below, (got.size() - below) * sizeof(K),
                             cudaMemcpyHostToDevice));
    });
    out.report.note("exchange: staged through host memory and MPI (" + ctx.describe() + ")");
  }
  return received;
}

// The smallest and largest ordered bits of this rank's keys ({max, 0} for none).
template <class K, class U>
std::vector<U> local_key_range(const K* keys, std::size_t n, U flip, cudaStream_t stream) {
  std::vector<U> lo_hi{std::numeric_limits<U>::max(), U(0)};
  if (!n) return lo_hi;
  static_assert(sizeof(Atomic<U>) == sizeof(U));
  gpu::DeviceBuffer<Atomic<U>> d(2);
  TANDEM_CUDA(cudaMemcpyAsync(d.data(), lo_hi.data(), 2 * sizeof(U), cudaMemcpyHostToDevice, stream));
  key_range_kernel<K, U><<<grid_for(n), kThreads, 0, stream>>>(keys, n, flip, d.data());
  TANDEM_CUDA(cudaGetLastError());
  TANDEM_CUDA(cudaMemcpyAsync(lo_hi.data(), d.data(), 2 * sizeof(U), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return lo_hi;
}

// This rank's keys per bin of the digit.
template <class K, class U>
std::vector<std::uint64_t> local_bin_counts(const K* keys, std::size_t n, U flip, plan::BinDigit digit,
                                            cudaStream_t stream) {
  std::vector<std::uint64_t> counts(digit.bins(), 0);
  if (!n) return counts;
  gpu::DeviceBuffer<unsigned long long> d(counts.size());
  TANDEM_CUDA(cudaMemsetAsync(d.data(), 0, counts.size() * sizeof(unsigned long long), stream));
  bin_count_kernel<K, U><<<grid_for(n), kThreads, 0, stream>>>(keys, n, flip, digit.shift, digit.bins() - 1, d.data());
  TANDEM_CUDA(cudaGetLastError());
  TANDEM_CUDA(cudaMemcpyAsync(counts.data(), d.data(), counts.size() * 8, cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return counts;
}

// The rank that owns each bin.
std::vector<std::uint16_t> owner_of_bins(const std::vector<std::uint32_t>& first) {
  std::vector<std::uint16_t> owner(first.back());
  for (std::size_t d = 0; d + 1 < first.size(); ++d)
    std::fill(owner.begin() + first[d], owner.begin() + first[d + 1], std::uint16_t(d));
  return owner;
}

// This rank's keys grouped by the rank that owns their bin (rank d: bins [first[d], first[d+1])),
// counts[d] of them for rank d.
template <class K, class U>
gpu::DeviceBuffer<K> partition_by_owner(const K* keys, std::size_t n, U flip, plan::BinDigit digit,
                                        const std::vector<std::uint32_t>& first,
                                        const std::vector<std::uint64_t>& counts, cudaStream_t stream) {
  const int ranks = int(counts.size());
  const std::uint32_t bins = digit.bins();
  const std::vector<std::uint16_t> owner = owner_of_bins(first);
  std::vector<unsigned long long> cursor(std::size_t(ranks), 0);
  for (int d = 1; d < ranks; ++d) cursor[d] = cursor[d - 1] + counts[d - 1];
  gpu::DeviceBuffer<K> parts(n);
  if (!n) return parts;
  gpu::DeviceBuffer<std::uint16_t> owner_d(bins);
  gpu::DeviceBuffer<unsigned long long> cursor_d(cursor.size());
  TANDEM_CUDA(
      cudaMemcpyAsync(owner_d.data(), owner.data(), bins * sizeof(std::uint16_t), cudaMemcpyHostToDevice, stream));
  TANDEM_CUDA(cudaMemcpyAsync(cursor_d.data(), cursor.data(), cursor.size() * sizeof(unsigned long long),
                              cudaMemcpyHostToDevice, stream));
  const std::size_t tiles = (n + kThreads * kItems - 1) / (kThreads * kItems);
  const std::size_t shared = std::size_t(ranks) * (sizeof(unsigned long long) + sizeof(unsigned int));
  partition_kernel<K, U><<<unsigned(tiles), kThreads, shared, stream>>>(
      keys, n, flip, digit.shift, bins - 1, owner_d.data(), ranks, cursor_d.data(), parts.data());
  TANDEM_CUDA(cudaGetLastError());
  TANDEM_CUDA(cudaStreamSynchronize(stream));  // the host vectors and device tables outlive their use
  return parts;
}

// Pairs grouped by the rank that owns their key's bin, stably (each rank's pairs keep their
// order): a radix sort of the owners (CUB's, stable) carrying positions, then a gather.
template <class I, class K, class V, class U>
std::pair<gpu::DeviceBuffer<K>, gpu::DeviceBuffer<V>> stable_partition_pairs(const K* keys, const V* values,
                                                                             std::size_t n, U flip,
                                                                             plan::BinDigit digit,
                                                                             const std::vector<std::uint32_t>& first,
                                                                             cudaStream_t stream) {
  const std::vector<std::uint16_t> owner_of = owner_of_bins(first);
  gpu::DeviceBuffer<K> keys_out(n);
  gpu::DeviceBuffer<V> values_out(n);
  if (!n) return {std::move(keys_out), std::move(values_out)};
  gpu::DeviceBuffer<I> index_sorted(n);
  {
    gpu::DeviceBuffer<std::uint16_t> owner_d(owner_of.size()), owner(n), owner_sorted(n);
    gpu::DeviceBuffer<I> index(n);
    TANDEM_CUDA(cudaMemcpyAsync(owner_d.data(), owner_of.data(), owner_of.size() * sizeof(std::uint16_t),
                                cudaMemcpyHostToDevice, stream));
    owner_index_kernel<K, U, I><<<grid_for(n), kThreads, 0, stream>>>(keys, n, flip, digit.shift, digit.bins() - 1,
                                                                      owner_d.data(), owner.data(), index.data());
    TANDEM_CUDA(cudaGetLastError());
    const int bits = std::max(1, int(std::bit_width(first.size() - 2)));  // owners 0 .. ranks - 1
    std::size_t temp_bytes = 0;
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, owner.data(), owner_sorted.data(), index.data(),
                                                index_sorted.data(), n, 0, bits, stream));
    gpu::DeviceBuffer<std::byte> temp(temp_bytes);
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(temp.data(), temp_bytes, owner.data(), owner_sorted.data(),
                                                index.data(), index_sorted.data(), n, 0, bits, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));  // before the scratch above is freed
  }
  gather_pairs_kernel<K, V, I>
      <<<grid_for(n), kThreads, 0, stream>>>(index_sorted.data(), n, keys, values, keys_out.data(), values_out.data());
  TANDEM_CUDA(cudaGetLastError());
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  return {std::move(keys_out), std::move(values_out)};
}

// Which rank owns which keys: the key range over all ranks, every rank's counts per bin summed,
// whole bins to ranks. Collective; adds the stages "key range" and "bin counts".
struct Owners {
  plan::BinDigit digit;
  std::vector<std::uint32_t> first;   // rank d owns bins [first[d], first[d+1])
  std::vector<std::uint64_t> counts;  // this rank's keys for each rank
};

template <class K>
Owners find_owners(const Context& ctx, const K* keys, std::size_t n, ordered_bits_t<K> flip, cudaStream_t stream,
                   DistReport& out, StageClock& clock) {
  using U = ordered_bits_t<K>;
  const Context::Impl& s = ctx.impl();
  const MPI_Datatype bits_type = sizeof(U) == 4 ? MPI_UINT32_T : MPI_UINT64_T;
  std::vector<U> range, global(2);
  ctx.run_agreed([&] { range = local_key_range<K, U>(keys, n, flip, stream); });
  check_mpi(MPI_Allreduce(&range[0], &global[0], 1, bits_type, MPI_MIN, s.comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&range[1], &global[1], 1, bits_type, MPI_MAX, s.comm), "MPI_Allreduce");
  clock.lap(out.report, "key range");
  Owners o;
  // With no key anywhere the range is empty (min above max): one bin, every count 0.
  o.digit = global[0] <= global[1] ? plan::bin_digit<U>(global[0], global[1], kBinBits) : plan::BinDigit{};
  std::vector<std::uint64_t> local_counts, global_counts(o.digit.bins());
  ctx.run_agreed([&] { local_counts = local_bin_counts<K, U>(keys, n, flip, o.digit, stream); });
  check_mpi(
      MPI_Allreduce(local_counts.data(), global_counts.data(), int(o.digit.bins()), MPI_UINT64_T, MPI_SUM, s.comm),
      "MPI_Allreduce");
  o.first = plan::bin_cuts(global_counts, s.size);
  o.counts = plan::keys_per_rank(local_counts, o.first);
  clock.lap(out.report, "bin counts", std::to_string(o.digit.bins()) + " bins of the key range");
  return o;
}

// After the local sorts: what each rank holds, gathered, and the send counts that make every
// slice exactly N/P (none when nothing moves).
std::optional<std::vector<std::uint64_t>> rebalance_counts(const Context::Impl& s, std::uint64_t held) {
  std::vector<std::uint64_t> all_held(std::size_t(s.size));
  check_mpi(MPI_Allgather(&held, 1, MPI_UINT64_T, all_held.data(), 1, MPI_UINT64_T, s.comm), "MPI_Allgather");
  plan::Rebalance moves = plan::rebalance(all_held, s.rank);
  if (!moves.moves) return std::nullopt;
  return std::move(moves.send);
}

void lap_exchange(StageClock& clock, DistReport& out) {
  clock.lap(out.report, "exchange",
            std::to_string(out.traffic.bytes_sent) + " B sent, " + std::to_string(out.traffic.bytes_received) +
                " B received");
}

void add_traffic(DistReport& out, const DistReport& more) {
  out.traffic.bytes_sent += more.traffic.bytes_sent;
  out.traffic.bytes_received += more.traffic.bytes_received;
}

// The end of every path: this rank's count out, and every rank's stages gathered into the report.
DistReport finished(const Context::Impl& s, DistReport& out, std::uint64_t count_out) {
  out.count_out = count_out;
  gather_rank_report(s, out);
  return std::move(out);
}

// A stream of this operation's own, destroyed with it.
struct OwnStream {
  cudaStream_t s{nullptr};
  explicit OwnStream(const Context& ctx) {
    ctx.run_agreed([&] { TANDEM_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); });
  }
  ~OwnStream() {
    if (s) cudaStreamDestroy(s);
  }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
};

}  // namespace

template <class K>
DistReport sort_device(const Context& ctx, gpu::DeviceBuffer<K>& keys, const SortOptions& opts) {
  const Context::Impl& s = ctx.impl();
  if (s.size > 65535) throw UsageError("dist::sort_device: at most 65535 ranks");
  DistReport out;
  out.report.operation = "dist sort_device";
  out.count_in = keys.size();
  StageClock clock;
  const OwnStream stream(ctx);
  auto sort_here = [&](gpu::DeviceBuffer<K>& d) {
    ctx.run_agreed([&] {
      tandem::sort_device(d.data(), d.size(), opts, stream.s);
      TANDEM_CUDA(cudaStreamSynchronize(stream.s));
    });
  };
  if (s.size == 1) {
    sort_here(keys);
    clock.lap(out.report, "local sort", std::to_string(keys.size()) + " keys on the GPU");
    out.report.note("exchange: none (one rank)");
    return finished(s, out, keys.size());
  }

  using U = ordered_bits_t<K>;
  const U flip = opts.descending ? std::numeric_limits<U>::max() : U(0);
  const Owners owners = find_owners(ctx, keys.data(), keys.size(), flip, stream.s, out, clock);
  gpu::DeviceBuffer<K> parts;
  ctx.run_agreed([&] {
    parts =
        partition_by_owner<K, U>(keys.data(), keys.size(), flip, owners.digit, owners.first, owners.counts, stream.s);
  });
  keys = gpu::DeviceBuffer<K>();  // the input's memory back before the exchange
  clock.lap(out.report, "partition", "keys grouped by the rank that owns their bin");

  gpu::DeviceBuffer<K> received = exchange_keys(ctx, parts.data(), owners.counts, stream.s, out);
  parts = gpu::DeviceBuffer<K>();
  lap_exchange(clock, out);

  sort_here(received);
  clock.lap(out.report, "local sort", std::to_string(received.size()) + " received keys sorted on the GPU");

  if (const auto send = rebalance_counts(s, received.size())) {
    DistReport moved;  // the rebalance's traffic is counted, its notes are the exchange's above
    keys = exchange_keys(ctx, received.data(), *send, stream.s, moved);
    received = gpu::DeviceBuffer<K>();
    add_traffic(out, moved);
    clock.lap(out.report, "rebalance",
              std::to_string(moved.traffic.bytes_sent) + " B sent for slices of exactly N/P keys");
  } else {
    keys = std::move(received);
    clock.lap(out.report, "rebalance", "none needed");
  }
  return finished(s, out, keys.size());
}

template <class K, class V>
DistReport sort_pairs_device(const Context& ctx, gpu::DeviceBuffer<K>& keys, gpu::DeviceBuffer<V>& values,
                             const SortOptions& opts) {
  const Context::Impl& s = ctx.impl();
  if (s.size > 65535) throw UsageError("dist::sort_pairs_device: at most 65535 ranks");
  if (keys.size() != values.size())
    throw UsageError("dist::sort_pairs_device: " + std::to_string(keys.size()) + " keys but " +
                     std::to_string(values.size()) + " values");
  DistReport out;
  out.report.operation = "dist sort_pairs_device";
  out.count_in = keys.size();
  StageClock clock;
  const OwnStream stream(ctx);
  auto sort_here = [&](gpu::DeviceBuffer<K>& k, gpu::DeviceBuffer<V>& v) {
    ctx.run_agreed([&] {
      tandem::sort_pairs_device(k.data(), v.data(), k.size(), opts, stream.s);
      TANDEM_CUDA(cudaStreamSynchronize(stream.s));
    });
  };
  if (s.size == 1) {
    sort_here(keys, values);
    clock.lap(out.report, "local sort", std::to_string(keys.size()) + " pairs on the GPU");
    out.report.note("exchange: none (one rank)");
    return finished(s, out, keys.size());
  }

  using U = ordered_bits_t<K>;
  const U flip = opts.descending ? std::numeric_limits<U>::max() : U(0);
  const std::size_t n = keys.size();
  const Owners owners = find_owners(ctx, keys.data(), n, flip, stream.s, out, clock);
  std::pair<gpu::DeviceBuffer<K>, gpu::DeviceBuffer<V>> parts;
  ctx.run_agreed([&] {
    parts = n <= std::numeric_limits<std::uint32_t>::max()
                ? stable_partition_pairs<std::uint32_t>(keys.data(), values.data(), n, flip, owners.digit, owners.first,
                                                        stream.s)
                : stable_partition_pairs<std::uint64_t>(keys.data(), values.data(), n, flip, owners.digit, owners.first,
                                                        stream.s);
  });
  keys = gpu::DeviceBuffer<K>();
  values = gpu::DeviceBuffer<V>();
  clock.lap(out.report, "partition", "pairs grouped, in order, by the rank that owns their key's bin");

  // Keys, then values, each in source-rank order: with each rank's pairs in input order, equal
  // keys arrive in (rank, position) order and the stable local sort keeps it.
  gpu::DeviceBuffer<K> rk = exchange_keys(ctx, parts.first.data(), owners.counts, stream.s, out);
  parts.first = gpu::DeviceBuffer<K>();
  DistReport more;
  gpu::DeviceBuffer<V> rv = exchange_keys(ctx, parts.second.data(), owners.counts, stream.s, more);
  parts.second = gpu::DeviceBuffer<V>();
  add_traffic(out, more);
  lap_exchange(clock, out);

  sort_here(rk, rv);
  clock.lap(out.report, "local sort", std::to_string(rk.size()) + " received pairs sorted on the GPU (stable)");

  if (const auto send = rebalance_counts(s, rk.size())) {
    DistReport moved;
    keys = exchange_keys(ctx, rk.data(), *send, stream.s, moved);
    rk = gpu::DeviceBuffer<K>();
    values = exchange_keys(ctx, rv.data(), *send, stream.s, moved);
    rv = gpu::DeviceBuffer<V>();
    add_traffic(out, moved);
    clock.lap(out.report, "rebalance",
              std::to_string(moved.traffic.bytes_sent) + " B sent for slices of exactly N/P pairs");
  } else {
    keys = std::move(rk);
    values = std::move(rv);
    clock.lap(out.report, "rebalance", "none needed");
  }
  return finished(s, out, keys.size());
}

template DistReport sort_device<std::uint32_t>(const Context&, gpu::DeviceBuffer<std::uint32_t>&, const SortOptions&);
template DistReport sort_device<std::int32_t>(const Context&, gpu::DeviceBuffer<std::int32_t>&, const SortOptions&);
template DistReport sort_device<std::uint64_t>(const Context&, gpu::DeviceBuffer<std::uint64_t>&, const SortOptions&);
template DistReport sort_device<std::int64_t>(const Context&, gpu::DeviceBuffer<std::int64_t>&, const SortOptions&);
template DistReport sort_device<float>(const Context&, gpu::DeviceBuffer<float>&, const SortOptions&);
template DistReport sort_device<double>(const Context&, gpu::DeviceBuffer<double>&, const SortOptions&);
#define TANDEM_DIST_SORT_PAIRS_DEVICE(K)                                                                          \
  template DistReport sort_pairs_device<K, std::uint32_t>(const Context&, gpu::DeviceBuffer<K>&,                  \
                                                          gpu::DeviceBuffer<std::uint32_t>&, const SortOptions&); \
  template DistReport sort_pairs_device<K, std::uint64_t>(const Context&, gpu::DeviceBuffer<K>&,                  \
                                                          gpu::DeviceBuffer<std::uint64_t>&, const SortOptions&);
TANDEM_DIST_SORT_PAIRS_DEVICE(std::uint32_t)
TANDEM_DIST_SORT_PAIRS_DEVICE(std::int32_t)
TANDEM_DIST_SORT_PAIRS_DEVICE(std::uint64_t)
TANDEM_DIST_SORT_PAIRS_DEVICE(std::int64_t)
TANDEM_DIST_SORT_PAIRS_DEVICE(float)
TANDEM_DIST_SORT_PAIRS_DEVICE(double)

}  // namespace tandem::dist
