// The distributed sort of keys in device memory: the same exact splitters as the host sort
// (their counts from a small binary-search kernel), the exchange through NCCL (or host staging),
// and one more device sort of the received runs (CUB's radix sort is faster than merging them).
#include <cstdint>
#include <string>
// No fmt here: nvcc with fmt 9 rejects its compile-time format strings.
#include <vector>

#include "dist/exchange.hpp"
#include "dist/rank_report.hpp"
#include "dist/splitters.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/dist.hpp"

namespace tandem::dist {
namespace {

template <class K, class U>
__global__ void count_sorted(const K* keys, std::size_t n, const U* xs, int m, bool strict, U flip,
                             unsigned long long* out) {
  const int j = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (j >= m) return;
  const U x = xs[j];
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const U b = U(to_ordered(keys[mid]) ^ flip);
    if (strict ? b < x : b <= x) lo = mid + 1;
    else hi = mid;
  }
  out[j] = lo;
}

template <class K>
struct DeviceCounter {
  using U = typename KeyOrder<K>::U;
  const K* keys;
  std::size_t n;
  U flip;
  cudaStream_t stream;
  gpu::DeviceBuffer<U>* xs;
  gpu::DeviceBuffer<unsigned long long>* counts;
  std::vector<std::uint64_t> operator()(std::span<const U> values, bool strict) const {
    const int m = int(values.size());
    TANDEM_CUDA(cudaMemcpyAsync(xs->data(), values.data(), values.size_bytes(), cudaMemcpyHostToDevice, stream));
    count_sorted<<<(m + 127) / 128, 128, 0, stream>>>(keys, n, xs->data(), m, strict, flip, counts->data());
    TANDEM_CUDA(cudaGetLastError());
    std::vector<std::uint64_t> out(values.size());
    TANDEM_CUDA(cudaMemcpyAsync(out.data(), counts->data(), out.size() * 8, cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    return out;
  }
};

#if TANDEM_HAS_NCCL
void check_nccl(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) throw Error(std::string(call) + " failed: " + ncclGetErrorString(r));
}
#endif

}  // namespace

template <class K>
DistReport sort_device(const Context& ctx, gpu::DeviceBuffer<K>& keys, const SortOptions& opts) {
  const Context::Impl& s = ctx.impl();
  DistReport out;
  out.report.operation = "dist sort_device";
  out.count_in = keys.size();
  StageClock clock;
  cudaStream_t stream = nullptr;
  ctx.run_agreed([&] {
    TANDEM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    tandem::sort_device(keys.data(), keys.size(), opts, stream);
    TANDEM_CUDA(cudaStreamSynchronize(stream));
  });
  clock.lap(out.report, "local sort", std::to_string(keys.size()) + " keys on the GPU");

  using U = typename KeyOrder<K>::U;
  const U flip = opts.descending ? std::numeric_limits<U>::max() : U(0);
  gpu::DeviceBuffer<U> xs(std::size_t(s.size));
  gpu::DeviceBuffer<unsigned long long> counts_d(std::size_t(s.size));
  const std::vector<std::uint64_t> cut =
      find_cuts<K>(s, keys.size(), DeviceCounter<K>{keys.data(), keys.size(), flip, stream, &xs, &counts_d});
  std::vector<std::uint64_t> counts(std::size_t(s.size)), recv_counts(std::size_t(s.size));
  for (int d = 0; d < s.size; ++d) counts[d] = cut[d + 1] - cut[d];
  clock.lap(out.report, "splitters", std::to_string(s.size - 1) + " cuts by bisection");

  gpu::DeviceBuffer<K> received;
  if (ctx.has_nccl()) {
#if TANDEM_HAS_NCCL
    check_mpi(MPI_Alltoall(counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, s.comm),
              "MPI_Alltoall");
    std::uint64_t total = 0;
    std::vector<std::uint64_t> at(std::size_t(s.size));
    for (int r = 0; r < s.size; ++r) at[r] = total, total += recv_counts[r];
    received = gpu::DeviceBuffer<K>(total);
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int d = 0; d < s.size; ++d) {
      if (d == s.rank) continue;
      if (counts[d])
        check_nccl(ncclSend(keys.data() + cut[d], counts[d] * sizeof(K), ncclUint8, d, s.nccl, stream), "ncclSend");
      if (recv_counts[d])
        check_nccl(ncclRecv(received.data() + at[d], recv_counts[d] * sizeof(K), ncclUint8, d, s.nccl, stream),
                   "ncclRecv");
      out.traffic.bytes_sent += counts[d] * sizeof(K);
      out.traffic.bytes_received += recv_counts[d] * sizeof(K);
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    if (counts[s.rank])
      TANDEM_CUDA(cudaMemcpyAsync(received.data() + at[s.rank], keys.data() + cut[s.rank], counts[s.rank] * sizeof(K),
                                  cudaMemcpyDeviceToDevice, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    out.report.note("exchange: NCCL, GPU to GPU");
#endif
  } else {
    std::vector<K> host(keys.size());
    TANDEM_CUDA(cudaMemcpy(host.data(), keys.data(), keys.bytes(), cudaMemcpyDeviceToHost));
    // exchange_bytes, not the typed helper: nvcc does not deduce its span arguments.
    std::vector<std::uint64_t> byte_counts(counts.size());
    for (std::size_t d = 0; d < counts.size(); ++d) byte_counts[d] = counts[d] * sizeof(K);
    std::vector<K> got;
    const Traffic t = exchange_bytes(s, reinterpret_cast<const std::byte*>(host.data()),
                                     std::span<const std::uint64_t>(byte_counts.data(), byte_counts.size()),
                                     recv_counts, [&](std::uint64_t bytes) {
                                       got.resize(bytes / sizeof(K));
                                       return reinterpret_cast<std::byte*>(got.data());
                                     });
    out.traffic.bytes_sent += t.bytes_sent;
    out.traffic.bytes_received += t.bytes_received;
    received = gpu::DeviceBuffer<K>(got.size());
    if (!got.empty())
      TANDEM_CUDA(cudaMemcpy(received.data(), got.data(), got.size() * sizeof(K), cudaMemcpyHostToDevice));
    out.report.note("exchange: staged through host memory and MPI (" + ctx.describe() + ")");
  }
  keys = gpu::DeviceBuffer<K>();  // the input's memory back before the final sort
  clock.lap(out.report, "exchange",
            std::to_string(out.traffic.bytes_sent) + " B sent, " + std::to_string(out.traffic.bytes_received) +
                " B received");
  ctx.run_agreed([&] {
    tandem::sort_device(received.data(), received.size(), opts, stream);
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    TANDEM_CUDA(cudaStreamDestroy(stream));
  });
  keys = std::move(received);
  clock.lap(out.report, "merge", std::to_string(keys.size()) + " received keys sorted on the GPU");
  out.count_out = keys.size();
  gather_rank_report(s, out);
  return out;
}

template DistReport sort_device<std::uint32_t>(const Context&, gpu::DeviceBuffer<std::uint32_t>&, const SortOptions&);
template DistReport sort_device<std::int32_t>(const Context&, gpu::DeviceBuffer<std::int32_t>&, const SortOptions&);
template DistReport sort_device<std::uint64_t>(const Context&, gpu::DeviceBuffer<std::uint64_t>&, const SortOptions&);
template DistReport sort_device<std::int64_t>(const Context&, gpu::DeviceBuffer<std::int64_t>&, const SortOptions&);
template DistReport sort_device<float>(const Context&, gpu::DeviceBuffer<float>&, const SortOptions&);
template DistReport sort_device<double>(const Context&, gpu::DeviceBuffer<double>&, const SortOptions&);

}  // namespace tandem::dist
